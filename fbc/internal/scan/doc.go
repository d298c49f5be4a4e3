// Package scan holds the byte-level scanners of the file-based catalog engine:
// a strict JSON validator and skipper that never builds a value, the members of
// a JSON object as spans, JSON string quoting and unquoting, compact and
// indented writers, and the fast YAML-to-JSON converter (with its plain-scalar
// resolution) that Load tries before the reference YAML decoder.
//
// It works on bytes only: it knows nothing about catalogs, schemas, files or
// the model of package fbc, and nothing outside fbc may import it.
package scan
