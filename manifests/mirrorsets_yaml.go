package manifests

import (
	"strings"

	"sigs.k8s.io/yaml"
)

// appendMirrorSetYAML appends the YAML of a mirror-set object (ImageDigestMirrorSet,
// ImageTagMirrorSet or ImageContentSourcePolicy) to b, byte for byte what
// sigs.k8s.io/yaml writes for it: keys sorted, lists at their key's column, every
// name unquoted. It writes it only when that is what yaml.Marshal would write
// (every name in the rules is a plainName, the object name a plainObjectName, at
// least one rule, each with a mirror) and reports false otherwise, b unchanged:
// the caller then serialises through yaml.Marshal. At 20,000 images the JSON to
// YAML round trip of sigs.k8s.io/yaml cost a no-op re-run about a second of CPU.
func appendMirrorSetYAML(b []byte, apiVersion, kind, name string, operatorLabel bool, field string, rs []MirrorRule) ([]byte, bool) {
	if len(rs) == 0 || !plainObjectName(name) || !plainKey(apiVersion) || !plainKey(kind) {
		return b, false
	}
	n := 0
	for _, r := range rs {
		if len(r.Mirrors) == 0 || !plainName(r.Source) {
			return b, false
		}
		n += len("  - mirrors:\n") + len("    source: \n") + len(r.Source)
		for _, m := range r.Mirrors {
			if !plainName(m) {
				return b, false
			}
			n += len("    - \n") + len(m)
		}
	}
	b = growBytes(b, n+256)
	b = append(b, "apiVersion: "...)
	b = append(b, apiVersion...)
	b = append(b, "\nkind: "...)
	b = append(b, kind...)
	b = append(b, "\nmetadata:\n"...)
	if operatorLabel {
		b = append(b, "  labels:\n    "+operatorCatalogLabel+": \"true\"\n"...)
	}
	b = append(b, "  name: "...)
	b = append(b, name...)
	b = append(b, "\nspec:\n  "...)
	b = append(b, field...)
	b = append(b, ":\n"...)
	for _, r := range rs {
		b = append(b, "  - mirrors:\n"...)
		for _, m := range r.Mirrors {
			b = append(b, "    - "...)
			b = append(b, m...)
			b = append(b, '\n')
		}
		b = append(b, "    source: "...)
		b = append(b, r.Source...)
		b = append(b, '\n')
	}
	return b, true
}

// growBytes returns b with room for n more bytes.
func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// plainObjectName reports whether YAML writes an object name as it is: lower-case
// letters, digits, "-" and ".", starting with a letter and holding a "-" (the
// names airlock gives its mirror sets, e.g. idms-operator-0; the "-" keeps it
// from reading as a boolean or null such as "yes" or "null").
func plainObjectName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' || !strings.Contains(s, "-") {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// plainKey reports whether YAML writes an apiVersion or kind as it is: letters,
// digits, "." and "/", starting with a letter, never one of YAML's words.
func plainKey(s string) bool {
	if s == "" || (s[0] < 'a' || s[0] > 'z') && (s[0] < 'A' || s[0] > 'Z') {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '/' {
			return false
		}
	}
	return len(s) > 5 // longer than every YAML word (true, false, null, yes, no, on, off, y, n)
}

// marshalMirrorSet serialises the mirror-set object o, whose fields are the other
// arguments: directly when appendMirrorSetYAML can, else through yaml.Marshal.
func marshalMirrorSet(o any, apiVersion, kind, name string, operatorLabel bool, field string, rs []MirrorRule) ([]byte, error) {
	if b, ok := appendMirrorSetYAML(nil, apiVersion, kind, name, operatorLabel, field, rs); ok {
		return b, nil
	}
	return yaml.Marshal(o)
}
