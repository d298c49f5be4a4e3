package signature

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
)

// FileName is the name a payload's Nth signature (1-based) is kept under
// outside a signature store: "sha256-<hex>-N", the key the cluster-version
// operator reads in a signature ConfigMap's binaryData. The archive and the
// workspace keep signatures under these names.
func FileName(d digest.Digest, n int) string {
	return fmt.Sprintf("%s-%s-%d", d.Algorithm(), d.Encoded(), n)
}

// ParseFileName reads a FileName back.
func ParseFileName(name string) (digest.Digest, int, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 1 || name[i+1] == '0' {
		return "", 0, false
	}
	alg, hex, ok := strings.Cut(name[:i], "-")
	if !ok {
		return "", 0, false
	}
	d := digest.NewDigestFromEncoded(digest.Algorithm(alg), hex)
	if d.Validate() != nil {
		return "", 0, false
	}
	return d, n, true
}

// FromFiles is the store of signatures carried in an archive: the files
// FileName(d, 1), FileName(d, 2), … at the root of fsys, until one is missing
// (os.DirFS of the folder they were extracted to, or an fstest.MapFS).
func FromFiles(fsys fs.FS) Store { return fileStore{fsys} }

type fileStore struct{ fsys fs.FS }

func (s fileStore) Signatures(_ context.Context, d digest.Digest) ([][]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("release signatures: digest %q: %w", d, err)
	}
	var out [][]byte
	for n := 1; n <= DefaultMaxSignatures; n++ {
		name := FileName(d, n)
		st, err := fs.Stat(s.fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("release signature %s: %w", name, err)
		}
		if st.Size() > DefaultMaxBytes {
			return nil, fmt.Errorf("release signature %s: %w (%d bytes)", name, ErrTooLarge, DefaultMaxBytes)
		}
		b, err := fs.ReadFile(s.fsys, name)
		if err != nil {
			return nil, fmt.Errorf("release signature %s: %w", name, err)
		}
		out = append(out, b)
	}
	return out, nil
}
