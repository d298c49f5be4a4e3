package transfer

import (
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// DetailKey names the log attribute that holds a failure's whole error: a
// run log keeps it, a console beside a run log shows only the short reason
// (workspace.Dir.OpenRunLog), so each failure's detail is written once.
const DetailKey = "detail"

// FailureClass says what kind of failure stopped an image, and so what the
// user does about it: run the same command again (ClassTransient) or change
// something first (every other class).
type FailureClass string

// The classes of failure.
const (
	// ClassTransient: the network, a 5xx or 429 answer, a timeout; retries
	// did not get past it, running the same command again may.
	ClassTransient FailureClass = "transient"
	// ClassDiskFull: no space left on the device being written.
	ClassDiskFull FailureClass = "disk-full"
	// ClassNotFound: the registry does not have the image or repository.
	ClassNotFound FailureClass = "not-found"
	// ClassDenied: the registry refused the credentials or the access.
	ClassDenied FailureClass = "denied"
	// ClassRefused: the registry refused the content (a sparse index, a
	// manifest it does not accept).
	ClassRefused FailureClass = "refused"
	// ClassDamaged: content does not match its digest.
	ClassDamaged FailureClass = "damaged"
	// ClassTLS: the host name is unknown or its certificate is not trusted.
	ClassTLS FailureClass = "tls"
	// ClassOther: anything else; the detail says what.
	ClassOther FailureClass = "other"
)

// Transient reports whether running the same command again may get past a
// failure of class c.
func (c FailureClass) Transient() bool { return c == ClassTransient }

// Classify says what kind of failure err is and returns one short line for
// the summary: what happened and what to do (the error itself, with every
// detail, goes to the log).
func Classify(err error) (FailureClass, string) {
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, syscall.ENOSPC):
		return ClassDiskFull, "the disk is full (no space left on device): free space on it or write to another disk, then run the same command; what was written is kept"
	case errors.Is(err, ErrSparseIndexRefused):
		return ClassRefused, "the destination refuses sparse indexes: allow them there (see the log) or remove platforms from this image's entry to copy every platform"
	case errors.Is(err, ErrNoPlatform):
		return ClassRefused, "the index offers none of the platforms asked for: change the platforms of this image's entry (the log lists those it offers)"
	case errors.Is(err, oci.ErrDigestMismatch):
		return ClassDamaged, "the content does not match its digest, again after retries: the copy it is read from is damaged (get the archive batch again, or report it to the source registry)"
	case retry.IsPermanentNetError(err):
		return ClassTLS, "unknown host or untrusted certificate: fix the host name, or trust its CA (--src-cert-dir/--dest-cert-dir)"
	}
	if re, ok := endpoint.AsRegistryError(err); ok {
		code := fmt.Sprintf("%d %s", re.StatusCode, http.StatusText(re.StatusCode))
		if len(re.Errors) > 0 {
			code += " " + string(re.Errors[0].Code)
		}
		switch {
		case re.StatusCode == http.StatusNotFound || re.Has(endpoint.CodeManifestUnknown, endpoint.CodeNameUnknown):
			// The registry client's message names what is missing and what to check.
			return ClassNotFound, ""
		case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden || re.Has(endpoint.CodeDenied, endpoint.CodeUnauthorized):
			return ClassDenied, fmt.Sprintf("%s refused access (%s): check the credentials for %s in the authfile (--authfile) and the account's rights", re.Host, code, re.Host)
		case retry.Transient(err):
			return ClassTransient, fmt.Sprintf("%s answered %s and retries did not get past it: run the same command again (what was copied is not copied again)", re.Host, code)
		default:
			return ClassRefused, fmt.Sprintf("%s refused it (%s): see the log for the registry's message; the registry's configuration or the image must change", re.Host, code)
		}
	}
	if retry.Transient(err) {
		return ClassTransient, "network failure or timeout that retries did not get past: run the same command again (what was copied is not copied again)"
	}
	return ClassOther, ""
}
