package redact

import "testing"

func TestCredentials(t *testing.T) {
	for _, tc := range []struct {
		in, want, host string
		found          bool
	}{
		{"docker://user:pw@host:5000/ns", "docker://***@host:5000/ns", "host:5000", true},
		{"admin:s3cret@registry.example.com/redhat/index:v4.16", "***@registry.example.com/redhat/index:v4.16", "registry.example.com", true},
		{"--from=docker://u@quay.io", "--from=docker://***@quay.io", "quay.io", true},
		{"user:p@ss@host/ns", "***@host/ns", "host", true},
		{"quay.io/ns/app:1.0", "quay.io/ns/app:1.0", "", false},
		{"quay.io/ns/app@sha256:abc", "quay.io/ns/app@sha256:abc", "", false},
		{"localhost@sha256:abc", "localhost@sha256:abc", "", false},
		{"oci:///path/with@at/layout", "oci:///path/with@at/layout", "", false},
		{"", "", "", false},
	} {
		got, found := Credentials(tc.in)
		if got != tc.want || found != tc.found {
			t.Errorf("Credentials(%q) = %q, %v; want %q, %v", tc.in, got, found, tc.want, tc.found)
		}
		if found {
			if h := Host(got); h != tc.host {
				t.Errorf("Host(%q) = %q, want %q", got, h, tc.host)
			}
		}
	}
}

func FuzzCredentials(f *testing.F) {
	for _, s := range []string{"docker://u:p@h/ns", "a@b", "x/y@sha256:1", "u:pw@quay.io/a/b:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, found := Credentials(s)
		if !found && got != s {
			t.Fatalf("nothing found but %q changed to %q", s, got)
		}
		if again, _ := Credentials(got); found && again != got {
			t.Fatalf("redacting twice changed %q to %q", got, again)
		}
	})
}
