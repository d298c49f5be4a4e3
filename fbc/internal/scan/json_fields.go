package scan

// Field is one member of a JSON object: its key and the span of its value.
type Field struct {
	Key        string
	Start, End int
}

// ObjectFields validates the JSON object at d[i] and returns its members.
func ObjectFields(d []byte, i int, fields []Field) ([]Field, int, error) {
	if i >= len(d) || d[i] != '{' {
		return fields, 0, Errorf(i, "expected an object")
	}
	i = SkipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return fields, i + 1, nil
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return fields, 0, Errorf(i, "expected a string object key")
		}
		ke, err := validString(d, i)
		if err != nil {
			return fields, 0, err
		}
		key, err := Unquote(d[i:ke])
		if err != nil {
			return fields, 0, Errorf(i, "%v", err)
		}
		i = SkipSpace(d, ke)
		if i >= len(d) || d[i] != ':' {
			return fields, 0, Errorf(i, "expected ':' after object key")
		}
		i = SkipSpace(d, i+1)
		vs := i
		if i, err = ValidValue(d, i, 1); err != nil {
			return fields, 0, err
		}
		fields = append(fields, Field{Key: key, Start: vs, End: i})
		i = SkipSpace(d, i)
		if i < len(d) && d[i] == ',' {
			i = SkipSpace(d, i+1)
			continue
		}
		if i < len(d) && d[i] == '}' {
			return fields, i + 1, nil
		}
		return fields, 0, Errorf(i, "expected ',' or '}' in object")
	}
}

// TrustedFields is ObjectFields for an object known to be valid JSON (the
// YAML converters wrote it): it only finds the members' bounds.
func TrustedFields(d []byte, i int, fields []Field) ([]Field, int, error) {
	i = SkipSpace(d, i+1)
	for i < len(d) && d[i] != '}' {
		ke := StringEnd(d, i)
		key, err := Unquote(d[i:ke])
		if err != nil {
			return fields, 0, err
		}
		i = SkipSpace(d, ke)
		i = SkipSpace(d, i+1) // ':'
		ve := SkipValue(d, i)
		fields = append(fields, Field{Key: key, Start: i, End: ve})
		i = SkipSpace(d, ve)
		if i < len(d) && d[i] == ',' {
			i = SkipSpace(d, i+1)
		}
	}
	return fields, i + 1, nil
}

// EachMember calls f for every member of the validated object v.
func EachMember(v []byte, f func(key string, val []byte) error) error {
	i := SkipSpace(v, 1)
	for i < len(v) && v[i] != '}' {
		ke := StringEnd(v, i)
		key, err := Unquote(v[i:ke])
		if err != nil {
			return err
		}
		i = SkipSpace(v, ke)
		i = SkipSpace(v, i+1) // ':'
		ve := SkipValue(v, i)
		if err := f(key, v[i:ve]); err != nil {
			return err
		}
		i = SkipSpace(v, ve)
		if i < len(v) && v[i] == ',' {
			i = SkipSpace(v, i+1)
		}
	}
	return nil
}

// EachElement calls f for every element of the validated array v.
func EachElement(v []byte, f func(n int, val []byte) error) error {
	i := SkipSpace(v, 1)
	for n := 0; i < len(v) && v[i] != ']'; n++ {
		ve := SkipValue(v, i)
		if err := f(n, v[i:ve]); err != nil {
			return err
		}
		i = SkipSpace(v, ve)
		if i < len(v) && v[i] == ',' {
			i = SkipSpace(v, i+1)
		}
	}
	return nil
}

// KindOf names the JSON type of the value v for error messages.
func KindOf(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
