package oci

import (
	"errors"
	"strings"
	"testing"
)

func TestRefuseCredentials(t *testing.T) {
	tests := []struct {
		in       string
		refused  bool
		redacted string
	}{
		{"docker://user:hunter2@reg.example:5000/ns", true, "docker://***@reg.example:5000/ns"},
		{"user:hunter2@quay.io/ns/app:v1", true, "***@quay.io/ns/app:v1"},
		{"docker://token@reg.example", true, "docker://***@reg.example"},
		{"docker://reg.example:5000/ns", false, "docker://reg.example:5000/ns"},
		{"quay.io/ns/app@sha256:" + strings.Repeat("a", 64), false, "quay.io/ns/app@sha256:" + strings.Repeat("a", 64)},
		{"busybox@sha256:" + strings.Repeat("b", 64), false, "busybox@sha256:" + strings.Repeat("b", 64)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			err := RefuseCredentials(tc.in)
			if got := RedactCredentials(tc.in); got != tc.redacted {
				t.Errorf("RedactCredentials = %q, want %q", got, tc.redacted)
			}
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidReference) {
				t.Fatalf("err %v, want a refusal", err)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "user:") || strings.Contains(err.Error(), "token@") {
				t.Fatalf("the refusal shows the credentials: %v", err)
			}
			for _, w := range []string{tc.redacted, "podman login", "--authfile"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
			if _, perr := ParseReference(tc.in); perr == nil || strings.Contains(perr.Error(), "hunter2") {
				t.Errorf("ParseReference: %v", perr)
			}
		})
	}
}
