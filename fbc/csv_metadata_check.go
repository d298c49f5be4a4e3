package fbc

import (
	"strconv"
	"strings"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// This file is the fast path of the olm.csv.metadata check (heavyChecker):
// a walk of the value against the field types of csvMetadata that says
// "encoding/json decodes this without error" without building anything. When
// it cannot say so for sure (a wrongly typed value, a non-ASCII key, a number
// for containerPort that is not a plain int32) the caller decodes with
// encoding/json, for its verdict and its message. On real catalogs this check
// was the largest cost of loading after parsing.

// jsonType is the shape encoding/json expects for a value.
type jsonType struct {
	kind   byte // 's' string, 'b' bool, 'i' int32, 'a' anything, 'o' object, 'l' list, 'm' map
	fields map[string]*jsonType
	elem   *jsonType
}

var (
	jtString = &jsonType{kind: 's'}
	jtBool   = &jsonType{kind: 'b'}
	jtInt32  = &jsonType{kind: 'i'}
	jtAny    = &jsonType{kind: 'a'}
)

func jtList(e *jsonType) *jsonType { return &jsonType{kind: 'l', elem: e} }

func jtObject(fields map[string]*jsonType) *jsonType {
	lower := make(map[string]*jsonType, len(fields))
	for k, v := range fields {
		lower[strings.ToLower(k)] = v
	}
	return &jsonType{kind: 'o', fields: lower}
}

// csvMetadataType is csvMetadata's shape (keep the two in step).
var csvMetadataType = func() *jsonType {
	resources := jtList(jtObject(map[string]*jsonType{"name": jtString, "kind": jtString, "version": jtString}))
	descriptors := jtList(jtObject(map[string]*jsonType{
		"path": jtString, "displayName": jtString, "description": jtString,
		"x-descriptors": jtList(jtString), "value": jtAny,
	}))
	crd := jtObject(map[string]*jsonType{
		"name": jtString, "version": jtString, "kind": jtString, "displayName": jtString, "description": jtString,
		"resources": resources, "statusDescriptors": descriptors, "specDescriptors": descriptors, "actionDescriptors": descriptors,
	})
	api := jtObject(map[string]*jsonType{
		"name": jtString, "group": jtString, "version": jtString, "kind": jtString, "deploymentName": jtString,
		"containerPort": jtInt32, "displayName": jtString, "description": jtString,
		"resources": resources, "statusDescriptors": descriptors, "specDescriptors": descriptors, "actionDescriptors": descriptors,
	})
	link := jtObject(map[string]*jsonType{"name": jtString, "url": jtString})
	return jtObject(map[string]*jsonType{
		"annotations":           {kind: 'm', elem: jtString},
		"apiServiceDefinitions": jtObject(map[string]*jsonType{"owned": jtList(api), "required": jtList(api)}),
		"crdDescriptions":       jtObject(map[string]*jsonType{"owned": jtList(crd), "required": jtList(crd)}),
		"description":           jtString,
		"displayName":           jtString,
		"installModes":          jtList(jtObject(map[string]*jsonType{"type": jtString, "supported": jtBool})),
		"keywords":              jtList(jtString),
		"labels":                {kind: 'm', elem: jtString},
		"links":                 jtList(link),
		"maintainers":           jtList(jtObject(map[string]*jsonType{"name": jtString, "email": jtString})),
		"maturity":              jtString,
		"minKubeVersion":        jtString,
		"nativeAPIs":            jtList(jtObject(map[string]*jsonType{"group": jtString, "version": jtString, "kind": jtString})),
		"provider":              link,
	})
}()

// decodesAs reports whether encoding/json surely decodes the validated JSON
// value v into a Go value of type t without error; false means "maybe not".
func decodesAs(v []byte, t *jsonType) bool {
	end, ok := decodesAt(v, 0, t)
	return ok && scan.SkipSpace(v, end) == len(v)
}

// decodesAt checks the value at v[i] (no leading space) against t, in one
// pass over its bytes, and returns the offset after it.
func decodesAt(v []byte, i int, t *jsonType) (int, bool) {
	c := v[i]
	if c == 'n' || t.kind == 'a' {
		return scan.SkipValue(v, i), true // null leaves any Go value as it is
	}
	switch t.kind {
	case 's':
		return scan.StringEnd(v, i), c == '"'
	case 'b':
		return scan.SkipValue(v, i), c == 't' || c == 'f'
	case 'i':
		end := scan.SkipValue(v, i)
		if c != '-' && !scan.IsDigit(c) {
			return end, false
		}
		_, err := strconv.ParseInt(string(v[i:end]), 10, 32)
		return end, err == nil
	case 'l':
		if c != '[' {
			return scan.SkipValue(v, i), false
		}
		i = scan.SkipSpace(v, i+1)
		for i < len(v) && v[i] != ']' {
			var ok bool
			if i, ok = decodesAt(v, i, t.elem); !ok {
				return i, false
			}
			i = scan.SkipSpace(v, i)
			if i < len(v) && v[i] == ',' {
				i = scan.SkipSpace(v, i+1)
			}
		}
		return i + 1, true
	case 'm', 'o':
		if c != '{' {
			return scan.SkipValue(v, i), false
		}
		var lower [64]byte
		i = scan.SkipSpace(v, i+1)
		for i < len(v) && v[i] != '}' {
			ke := scan.StringEnd(v, i)
			key := v[i+1 : ke-1]
			i = scan.SkipSpace(v, ke)
			i = scan.SkipSpace(v, i+1) // ':'
			ft := t.elem
			if t.kind == 'o' {
				if len(key) > len(lower) {
					ft = nil // no field has so long a name
				} else {
					for k, b := range key {
						if b >= 0x80 || b == '\\' {
							return i, false // escapes, non-ASCII letters encoding/json may fold: ask it
						}
						if 'A' <= b && b <= 'Z' {
							b += 'a' - 'A'
						}
						lower[k] = b
					}
					ft = t.fields[string(lower[:len(key)])]
				}
			}
			if ft == nil {
				i = scan.SkipValue(v, i)
			} else {
				var ok bool
				if i, ok = decodesAt(v, i, ft); !ok {
					return i, false
				}
			}
			i = scan.SkipSpace(v, i)
			if i < len(v) && v[i] == ',' {
				i = scan.SkipSpace(v, i+1)
			}
		}
		return i + 1, true
	}
	return i, false
}
