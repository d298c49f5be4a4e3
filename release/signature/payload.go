package signature

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
)

// SignatureType is critical.type of an atomic container signature.
const SignatureType = "atomic container signature"

// Payload is the signed document of an atomic container signature (the
// "simple signing" format of containers/image):
//
//	{"critical": {"type": "atomic container signature",
//	              "image": {"docker-manifest-digest": "sha256:…"},
//	              "identity": {"docker-reference": "quay.io/…:4.15.0-x86_64"}},
//	 "optional": {"creator": "…", "timestamp": 1700000000}}
type Payload struct {
	// Digest is critical.image.docker-manifest-digest.
	Digest digest.Digest
	// Reference is critical.identity.docker-reference.
	Reference string
	// Creator and Timestamp are optional.creator and optional.timestamp
	// (informational; a zero Timestamp when absent).
	Creator   string
	Timestamp time.Time
}

// ParsePayload reads the signed document strictly, as containers/image does:
// critical holds exactly type, image and identity, image exactly
// docker-manifest-digest, identity exactly docker-reference; the type must be
// SignatureType and the digest valid; optional may hold anything, but creator
// must be a string and timestamp an integer when present. One JSON document,
// nothing after it.
func ParsePayload(b []byte) (Payload, error) {
	var doc struct {
		Critical json.RawMessage            `json:"critical"`
		Optional map[string]json.RawMessage `json:"optional"`
	}
	if err := decodeOnly(b, &doc, "critical", "optional"); err != nil {
		return Payload{}, err
	}
	if doc.Critical == nil {
		return Payload{}, errors.New("the signed document has no critical section")
	}
	var crit struct {
		Type     *string         `json:"type"`
		Image    json.RawMessage `json:"image"`
		Identity json.RawMessage `json:"identity"`
	}
	if err := decodeOnly(doc.Critical, &crit, "type", "image", "identity"); err != nil {
		return Payload{}, fmt.Errorf("critical: %w", err)
	}
	if crit.Type == nil || *crit.Type != SignatureType {
		got := "none"
		if crit.Type != nil {
			got = fmt.Sprintf("%q", *crit.Type)
		}
		return Payload{}, fmt.Errorf("critical.type is %s, not %q", got, SignatureType)
	}
	var img struct {
		Digest *string `json:"docker-manifest-digest"`
	}
	if err := decodeOnly(crit.Image, &img, "docker-manifest-digest"); err != nil || img.Digest == nil {
		return Payload{}, fmt.Errorf("critical.image must hold docker-manifest-digest only (%v)", err)
	}
	d, err := digest.Parse(*img.Digest)
	if err != nil {
		return Payload{}, fmt.Errorf("critical.image.docker-manifest-digest %q: %w", *img.Digest, err)
	}
	var id struct {
		Ref *string `json:"docker-reference"`
	}
	if err := decodeOnly(crit.Identity, &id, "docker-reference"); err != nil || id.Ref == nil {
		return Payload{}, fmt.Errorf("critical.identity must hold docker-reference only (%v)", err)
	}
	p := Payload{Digest: d, Reference: *id.Ref}
	if raw, ok := doc.Optional["creator"]; ok {
		if err := json.Unmarshal(raw, &p.Creator); err != nil {
			return Payload{}, fmt.Errorf("optional.creator is not a string")
		}
	}
	if raw, ok := doc.Optional["timestamp"]; ok {
		var ts int64
		if err := json.Unmarshal(raw, &ts); err != nil {
			return Payload{}, fmt.Errorf("optional.timestamp is not an integer")
		}
		p.Timestamp = time.Unix(ts, 0).UTC()
	}
	return p, nil
}

// decodeOnly decodes one JSON object into v, refusing fields other than
// allowed (matched exactly, unlike encoding/json's case-insensitive match),
// duplicated fields and anything after the object.
func decodeOnly(b []byte, v any, allowed ...string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("missing")
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&fields); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the JSON object")
	}
	for k := range fields {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return fmt.Errorf("unexpected field %q", k)
		}
	}
	if n := countKeys(b); n != len(fields) {
		return errors.New("a field appears twice")
	}
	return json.Unmarshal(b, v)
}

// countKeys counts the top-level keys of a JSON object (duplicates included).
func countKeys(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return -1
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return -1
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return -1
		}
		n++
	}
	return n
}
