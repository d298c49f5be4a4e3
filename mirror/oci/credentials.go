package oci

import (
	"fmt"

	"github.com/airlock-mirror/airlock/internal/redact"
)

// RefuseCredentials returns an error when s, an image reference or a
// destination ("docker://user:password@host/ns"), carries credentials before
// its host. The error shows the reference with the credentials replaced by
// "***" and says where credentials go instead; s is never quoted as given.
func RefuseCredentials(s string) error {
	red, ok := redact.Credentials(s)
	if !ok {
		return nil
	}
	host := redact.Host(red)
	return fmt.Errorf("%w %s: credentials in a reference are not supported (they would be kept in shell history, logs and reports): remove them and log in instead (podman login %s, or podman login --authfile FILE %s then --authfile FILE)", ErrInvalidReference, red, host, host)
}

// RedactCredentials returns s with any "user[:password]@" before the host
// replaced by "***@".
func RedactCredentials(s string) string {
	red, _ := redact.Credentials(s)
	return red
}
