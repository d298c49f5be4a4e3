package prune

import (
	"strconv"
	"strings"
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
	if v[0] == 'n' {
		return true // null leaves any Go value as it is
	}
	switch t.kind {
	case 'a':
		return true
	case 's':
		return v[0] == '"'
	case 'b':
		return v[0] == 't' || v[0] == 'f'
	case 'i':
		if v[0] != '-' && !isDigit(v[0]) {
			return false
		}
		_, err := strconv.ParseInt(string(v), 10, 32)
		return err == nil
	case 'l':
		if v[0] != '[' {
			return false
		}
		ok := true
		_ = eachElement(v, func(_ int, el []byte) error {
			ok = ok && decodesAs(el, t.elem)
			return nil
		})
		return ok
	case 'm', 'o':
		if v[0] != '{' {
			return false
		}
		ok := true
		_ = eachMember(v, func(key string, val []byte) error {
			if !ok {
				return nil
			}
			if t.kind == 'm' {
				ok = decodesAs(val, t.elem)
				return nil
			}
			for i := 0; i < len(key); i++ {
				if key[i] >= 0x80 {
					ok = false // encoding/json folds some non-ASCII letters: ask it
					return nil
				}
			}
			if ft := t.fields[strings.ToLower(key)]; ft != nil {
				ok = decodesAs(val, ft)
			}
			return nil
		})
		return ok
	}
	return false
}
