package fbc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// This file holds the checks of the heavy property values (olm.bundle.object and
// olm.csv.metadata) that opm applies: PropertyChecker runs them on the values a
// bundle has (for validate.Catalog), and Load runs them before it elides a value
// (LoadOptions.ElideHeavy), keeping the result on the bundle, so validate.Catalog
// reports the same problems either way.

// propertyError is the problem found in the value of the property at index of
// a bundle's Properties when Load checked it before eliding it.
type propertyError struct {
	index int32
	err   error
}

// BundleObjectError is a bad olm.bundle.object value, reported as opm's loader
// reports it (opm refuses the catalog while loading it).
type BundleObjectError struct {
	// convert is true when the data decoded but is not YAML or JSON; false when
	// the value itself did not decode (not an object, data not base64, ...).
	convert bool
	err     error
}

// Error is the decoding or conversion error alone.
func (e *BundleObjectError) Error() string { return e.err.Error() }

// Message is opm's wording for the olm.bundle.object property at index of a
// bundle's Properties, without the package and bundle a validation problem
// adds.
func (e *BundleObjectError) Message(index int) string {
	if e.convert {
		return "read bundle objects: convert bundle object property at index " + strconv.Itoa(index) + " to JSON: " + e.err.Error()
	}
	return "read bundle objects: parse property at index " + strconv.Itoa(index) + " as bundle object: " + e.err.Error()
}

// csvMetadata mirrors the field types of opm's property.CSVMetadata (and of the
// operator-framework/api v1alpha1 types it uses), so that encoding/json refuses
// the same wrongly typed values opm refuses. Unknown fields are ignored, as opm
// ignores them.
type csvMetadata struct {
	Annotations               map[string]string        `json:"annotations,omitempty"`
	APIServiceDefinitions     csvAPIServiceDefinitions `json:"apiServiceDefinitions,omitempty"`
	CustomResourceDefinitions csvCRDDefinitions        `json:"crdDescriptions,omitempty"`
	Description               string                   `json:"description,omitempty"`
	DisplayName               string                   `json:"displayName,omitempty"`
	InstallModes              []csvInstallMode         `json:"installModes,omitempty"`
	Keywords                  []string                 `json:"keywords,omitempty"`
	Labels                    map[string]string        `json:"labels,omitempty"`
	Links                     []csvAppLink             `json:"links,omitempty"`
	Maintainers               []csvMaintainer          `json:"maintainers,omitempty"`
	Maturity                  string                   `json:"maturity,omitempty"`
	MinKubeVersion            string                   `json:"minKubeVersion,omitempty"`
	NativeAPIs                []csvGroupVersionKind    `json:"nativeAPIs,omitempty"`
	Provider                  csvAppLink               `json:"provider,omitempty"`
}

type (
	csvAPIServiceDefinitions struct {
		Owned    []csvAPIServiceDescription `json:"owned,omitempty"`
		Required []csvAPIServiceDescription `json:"required,omitempty"`
	}
	csvCRDDefinitions struct {
		Owned    []csvCRDDescription `json:"owned,omitempty"`
		Required []csvCRDDescription `json:"required,omitempty"`
	}
	csvCRDDescription struct {
		Name              string                    `json:"name"`
		Version           string                    `json:"version"`
		Kind              string                    `json:"kind"`
		DisplayName       string                    `json:"displayName,omitempty"`
		Description       string                    `json:"description,omitempty"`
		Resources         []csvAPIResourceReference `json:"resources,omitempty"`
		StatusDescriptors []csvDescriptor           `json:"statusDescriptors,omitempty"`
		SpecDescriptors   []csvDescriptor           `json:"specDescriptors,omitempty"`
		ActionDescriptor  []csvDescriptor           `json:"actionDescriptors,omitempty"`
	}
	csvAPIServiceDescription struct {
		Name              string                    `json:"name"`
		Group             string                    `json:"group"`
		Version           string                    `json:"version"`
		Kind              string                    `json:"kind"`
		DeploymentName    string                    `json:"deploymentName,omitempty"`
		ContainerPort     int32                     `json:"containerPort,omitempty"`
		DisplayName       string                    `json:"displayName,omitempty"`
		Description       string                    `json:"description,omitempty"`
		Resources         []csvAPIResourceReference `json:"resources,omitempty"`
		StatusDescriptors []csvDescriptor           `json:"statusDescriptors,omitempty"`
		SpecDescriptors   []csvDescriptor           `json:"specDescriptors,omitempty"`
		ActionDescriptor  []csvDescriptor           `json:"actionDescriptors,omitempty"`
	}
	csvAPIResourceReference struct {
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		Version string `json:"version"`
	}
	// csvDescriptor is v1alpha1's StatusDescriptor, SpecDescriptor and
	// ActionDescriptor (the same fields).
	csvDescriptor struct {
		Path         string          `json:"path"`
		DisplayName  string          `json:"displayName,omitempty"`
		Description  string          `json:"description,omitempty"`
		XDescriptors []string        `json:"x-descriptors,omitempty"`
		Value        json.RawMessage `json:"value,omitempty"`
	}
	csvInstallMode struct {
		Type      string `json:"type"`
		Supported bool   `json:"supported"`
	}
	csvAppLink struct {
		Name string `json:"name,omitempty"`
		URL  string `json:"url,omitempty"`
	}
	csvMaintainer struct {
		Name  string `json:"name,omitempty"`
		Email string `json:"email,omitempty"`
	}
	csvGroupVersionKind struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	}
)

// heavyChecker checks heavy property values. It keeps a scratch buffer for
// decoded base64, so one checker must not be used by two goroutines at once.
type heavyChecker struct {
	buf []byte
}

// check returns the problem of the value raw of a property of type typ, nil if
// opm accepts it. valid says raw is known to be one valid JSON value (Load
// checked it); otherwise bundle objects are checked for it before their fast
// path.
func (hc *heavyChecker) check(typ string, raw []byte, valid bool) error {
	switch typ {
	case PropertyBundleObject:
		return hc.bundleObject(raw, valid)
	case PropertyCSVMetadata:
		if t := bytes.TrimSpace(raw); len(t) > 0 && (valid || validJSON(t)) && decodesAs(t, csvMetadataType) {
			return nil
		}
		var m csvMetadata
		return decodePropertyValue(raw, &m)
	}
	return nil
}

// bundleObject checks an olm.bundle.object value as opm's loader does: the value
// decodes (encoding/json) into {data []byte} — so data is standard base64, line
// breaks allowed — and the data converts to JSON (k8s.io/apimachinery's
// yaml.ToJSON: kept as is when its first non-space character is '{', else
// converted from YAML with sigs.k8s.io/yaml).
//
// The usual value, an object whose data is a plain string, is decoded here
// without encoding/json (which would first scan the whole value again); any
// other shape goes through encoding/json for its exact behaviour and message.
func (hc *heavyChecker) bundleObject(raw []byte, valid bool) error {
	data, ok, err := hc.bundleObjectData(raw, valid)
	if !ok {
		var o bundleObjectValue
		if err := decodePropertyValue(raw, &o); err != nil {
			return &BundleObjectError{err: err}
		}
		data = o.Data
	} else if err != nil {
		return &BundleObjectError{err: err}
	}
	var cerr error
	if !isJSONBuffer(data) {
		if _, yerr := yaml.YAMLToJSON(data); yerr != nil {
			cerr = &BundleObjectError{convert: true, err: yerr}
		}
	}
	if cap(hc.buf) > scan.MaxKeptScratch {
		hc.buf = nil
	}
	return cerr
}

// bundleObjectData decodes the data of the bundle object raw on the fast path.
// ok is false when raw is not a valid object whose "data" members are all
// strings or null; the caller then uses encoding/json. The returned data may
// alias hc.buf.
func (hc *heavyChecker) bundleObjectData(raw []byte, valid bool) (data []byte, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false, nil
	}
	if !valid {
		// A value Load did not check (validate.Catalog on a hand-made catalog):
		// the fast path needs one valid JSON object.
		if end, err := scan.ValidValue(raw, 0, 0); err != nil || end != len(raw) {
			return nil, false, nil
		}
	}
	// The members of the (valid) object, as eachMember walks them; a loop
	// rather than a callback, which would allocate for every value.
	i := scan.SkipSpace(raw, 1)
	for i < len(raw) && raw[i] != '}' {
		ke := scan.StringEnd(raw, i)
		key := raw[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			u, _ := scan.Unquote(raw[i:ke])
			key = []byte(u)
		}
		i = scan.SkipSpace(raw, ke)
		i = scan.SkipSpace(raw, i+1) // ':'
		ve := scan.SkipValue(raw, i)
		if v := raw[i:ve]; bytes.EqualFold(key, []byte("data")) {
			switch v[0] {
			case 'n': // null sets a []byte to nil
				data = nil
			case '"':
				d, derr := hc.decodeData(v)
				if derr != nil {
					// encoding/json keeps the first error and goes on.
					if err == nil {
						err = derr
					}
					d = nil
				}
				data = d
			default:
				return nil, false, nil
			}
		}
		i = scan.SkipSpace(raw, ve)
		if i < len(raw) && raw[i] == ',' {
			i = scan.SkipSpace(raw, i+1)
		}
	}
	return data, true, err
}

// decodeData decodes the JSON string v (quotes included) as encoding/json
// decodes a []byte: standard base64, line breaks ignored. The result may alias
// hc.buf, or be jsonMarker when only its start needed decoding.
func (hc *heavyChecker) decodeData(v []byte) ([]byte, error) {
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		u, _ := scan.Unquote(v)
		s = []byte(u)
	}
	if b64Plain(s) {
		// Valid base64 for sure: decode only what decides the conversion
		// when that is enough.
		var pre [48]byte
		m, _ := base64.StdEncoding.Decode(pre[:], s[:min(len(s), 64)])
		if t := bytes.TrimLeftFunc(pre[:m], unicode.IsSpace); len(t) > 0 && t[0] == '{' {
			return jsonMarker, nil
		}
	}
	n := base64.StdEncoding.DecodedLen(len(s))
	if cap(hc.buf) < n {
		hc.buf = make([]byte, n)
	}
	m, err := base64.StdEncoding.Decode(hc.buf[:n], s)
	if err != nil {
		return nil, err
	}
	return hc.buf[:m], nil
}

// jsonMarker stands for decoded data that starts with '{' (what is after it
// does not matter to opm).
var jsonMarker = []byte("{")

// b64Plain reports whether s is base64 that base64.StdEncoding.Decode accepts
// for sure: a length multiple of 4, only characters of the alphabet, at most
// two '=' at the end. false means "not sure" (line breaks, bad characters,
// ...): the caller then decodes with the standard library, for its verdict and
// message. It is about twice as fast as decoding.
func b64Plain(s []byte) bool {
	n := len(s)
	if n%4 != 0 {
		return false
	}
	if n == 0 {
		return true
	}
	body := s
	if s[n-1] == '=' {
		body = s[:n-1]
		if s[n-2] == '=' {
			body = s[:n-2]
		}
	}
	var bad byte
	for len(body) >= 8 {
		_ = body[7]
		bad |= b64Bad[body[0]] | b64Bad[body[1]] | b64Bad[body[2]] | b64Bad[body[3]] |
			b64Bad[body[4]] | b64Bad[body[5]] | b64Bad[body[6]] | b64Bad[body[7]]
		body = body[8:]
	}
	for _, c := range body {
		bad |= b64Bad[c]
	}
	return bad == 0
}

// b64Bad is 1 for the bytes outside the standard base64 alphabet.
var b64Bad = func() (t [256]byte) {
	for i := range t {
		t[i] = 1
	}
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = 0
	}
	return t
}()

// validJSON reports whether v is exactly one valid JSON value.
func validJSON(v []byte) bool {
	end, err := scan.ValidValue(v, 0, 0)
	return err == nil && end == len(v)
}

// isJSONBuffer is apimachinery's yaml.IsJSONBuffer: the first non-space
// character is '{'.
func isJSONBuffer(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeftFunc(b, unicode.IsSpace), []byte("{"))
}
