package imageset

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad checks that Load and LoadDelete never panic, that every rejection is an
// Errors value whose lines start with the file name, and that any accepted
// configuration re-marshals and re-loads to the same value.
func FuzzLoad(f *testing.F) {
	valid, _ := filepath.Glob("testdata/valid/*")
	invalid, _ := filepath.Glob("testdata/invalid/*")
	for _, file := range append(valid, invalid...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - &a {name: quay.io/a/b:1}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			checkErrors(t, err)
		} else {
			checkRoundTrip(t, c)
			if verr := c.Validate(); verr != nil {
				t.Fatalf("Validate rejects what Load accepted: %v", verr)
			}
		}
		d, err := LoadDelete(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			checkErrors(t, err)
		} else if verr := d.Validate(); verr != nil {
			t.Fatalf("Validate rejects what LoadDelete accepted: %v", verr)
		}
	})
}

func checkErrors(t *testing.T, err error) {
	t.Helper()
	var es Errors
	if !errors.As(err, &es) || len(es) == 0 {
		t.Fatalf("error %T is not a non-empty Errors: %v", err, err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "fuzz.yaml") {
			t.Fatalf("problem line %q does not start with the file name", line)
		}
	}
	if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNotSupported) {
		t.Fatalf("error wraps neither ErrInvalid nor ErrNotSupported: %v", err)
	}
}
