package fbc

// field is one member of a JSON object: its key and the span of its value.
type field struct {
	key        string
	start, end int
}

// objectFields validates the JSON object at d[i] and returns its members.
func objectFields(d []byte, i int, fields []field) ([]field, int, error) {
	if i >= len(d) || d[i] != '{' {
		return fields, 0, synErr(i, "expected an object")
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return fields, i + 1, nil
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return fields, 0, synErr(i, "expected a string object key")
		}
		ke, err := validString(d, i)
		if err != nil {
			return fields, 0, err
		}
		key, err := unquote(d[i:ke])
		if err != nil {
			return fields, 0, synErr(i, "%v", err)
		}
		i = skipWS(d, ke)
		if i >= len(d) || d[i] != ':' {
			return fields, 0, synErr(i, "expected ':' after object key")
		}
		i = skipWS(d, i+1)
		vs := i
		if i, err = validValue(d, i, 1); err != nil {
			return fields, 0, err
		}
		fields = append(fields, field{key: key, start: vs, end: i})
		i = skipWS(d, i)
		if i < len(d) && d[i] == ',' {
			i = skipWS(d, i+1)
			continue
		}
		if i < len(d) && d[i] == '}' {
			return fields, i + 1, nil
		}
		return fields, 0, synErr(i, "expected ',' or '}' in object")
	}
}

// trustedFields is objectFields for an object known to be valid JSON (the
// YAML converters wrote it): it only finds the members' bounds.
func trustedFields(d []byte, i int, fields []field) ([]field, int, error) {
	i = skipWS(d, i+1)
	for i < len(d) && d[i] != '}' {
		ke := stringEnd(d, i)
		key, err := unquote(d[i:ke])
		if err != nil {
			return fields, 0, err
		}
		i = skipWS(d, ke)
		i = skipWS(d, i+1) // ':'
		ve := skipValue(d, i)
		fields = append(fields, field{key: key, start: i, end: ve})
		i = skipWS(d, ve)
		if i < len(d) && d[i] == ',' {
			i = skipWS(d, i+1)
		}
	}
	return fields, i + 1, nil
}

// eachMember calls f for every member of the validated object v.
func eachMember(v []byte, f func(key string, val []byte) error) error {
	i := skipWS(v, 1)
	for i < len(v) && v[i] != '}' {
		ke := stringEnd(v, i)
		key, err := unquote(v[i:ke])
		if err != nil {
			return err
		}
		i = skipWS(v, ke)
		i = skipWS(v, i+1) // ':'
		ve := skipValue(v, i)
		if err := f(key, v[i:ve]); err != nil {
			return err
		}
		i = skipWS(v, ve)
		if i < len(v) && v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return nil
}

// eachElement calls f for every element of the validated array v.
func eachElement(v []byte, f func(n int, val []byte) error) error {
	i := skipWS(v, 1)
	for n := 0; i < len(v) && v[i] != ']'; n++ {
		ve := skipValue(v, i)
		if err := f(n, v[i:ve]); err != nil {
			return err
		}
		i = skipWS(v, ve)
		if i < len(v) && v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return nil
}

// kindOf names the JSON type of the value v for error messages.
func kindOf(v []byte) string {
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
