package registryserver

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// Htpasswd holds the users of an htpasswd file whose passwords are bcrypt hashes,
// as `htpasswd -B` (Apache) and `docker run registry` deployments write them.
// Other hash kinds (MD5 "$apr1$", SHA-1 "{SHA}", crypt, plaintext) are refused
// when the file is read.
type Htpasswd struct {
	entries map[string][]byte // user → bcrypt hash

	// ok caches sha256(user NUL password) of credentials that verified, so that
	// a client sending the same credentials on every request pays for bcrypt once.
	ok sync.Map
}

// dummyHash is compared against for unknown users so that a miss costs about as
// much as a wrong password.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("airlock-dummy"), bcrypt.DefaultCost)
	return h
})

// LoadHtpasswd reads the htpasswd file at path.
func LoadHtpasswd(path string) (*Htpasswd, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read htpasswd file: %w", err)
	}
	defer f.Close()
	return ParseHtpasswd(f, path)
}

// ParseHtpasswd reads htpasswd lines "user:$2y$..." from r; name (the file name)
// prefixes errors. Blank lines and lines starting with # are ignored.
func ParseHtpasswd(r io.Reader, name string) (*Htpasswd, error) {
	h := &Htpasswd{entries: map[string][]byte{}}
	firstLine := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		user, hash, ok := strings.Cut(t, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("%s line %d: want user:hash (as written by htpasswd -B)", name, line)
		}
		if strings.ContainsAny(user, " \t") {
			return nil, fmt.Errorf("%s line %d: user name %q contains white space", name, line, user)
		}
		if prev, dup := firstLine[user]; dup {
			return nil, fmt.Errorf("%s line %d: user %q is already defined on line %d: keep one entry per user", name, line, user, prev)
		}
		if !isBcrypt(hash) {
			return nil, fmt.Errorf("%s line %d: user %q does not have a bcrypt password hash (%s): only bcrypt is supported; re-create the entry with htpasswd -B", name, line, user, hashKind(hash))
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("%s line %d: user %q: malformed bcrypt hash: %w; re-create the entry with htpasswd -B", name, line, user, err)
		}
		firstLine[user] = line
		h.entries[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s line %d: %w", name, line+1, err)
	}
	if len(h.entries) == 0 {
		return nil, fmt.Errorf("%s: no users: add one with htpasswd -B %s USER", name, name)
	}
	return h, nil
}

func isBcrypt(hash string) bool {
	return len(hash) == 60 && hash[0] == '$' && hash[1] == '2' && hash[3] == '$' &&
		strings.ContainsRune("abxy", rune(hash[2]))
}

func hashKind(hash string) string {
	switch {
	case strings.HasPrefix(hash, "$apr1$"):
		return "Apache MD5"
	case strings.HasPrefix(hash, "{SHA}"):
		return "SHA-1"
	case strings.HasPrefix(hash, "$1$"):
		return "MD5-crypt"
	case strings.HasPrefix(hash, "$5$"), strings.HasPrefix(hash, "$6$"):
		return "SHA-crypt"
	case strings.HasPrefix(hash, "$2"):
		return "truncated or malformed bcrypt"
	case len(hash) == 13:
		return "DES crypt"
	}
	return "plaintext or unknown"
}

// Users returns the user names, sorted.
func (h *Htpasswd) Users() []string {
	out := make([]string, 0, len(h.entries))
	for u := range h.entries {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// Authenticate reports whether password is user's password.
func (h *Htpasswd) Authenticate(user, password string) bool {
	key := credentialKey(user, password)
	if _, ok := h.ok.Load(key); ok {
		return true
	}
	hash, found := h.entries[user]
	if !found {
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return false
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		return false
	}
	h.ok.Store(key, struct{}{})
	return true
}

func credentialKey(user, password string) [sha256.Size]byte {
	var b bytes.Buffer
	b.WriteString(user)
	b.WriteByte(0)
	b.WriteString(password)
	return sha256.Sum256(b.Bytes())
}

// authenticator combines the plaintext Users and the Htpasswd file of cfg; nil
// means anonymous access.
func (cfg Config) authenticator() (func(user, password string) bool, error) {
	var ht *Htpasswd
	if cfg.Htpasswd != "" {
		var err error
		if ht, err = LoadHtpasswd(cfg.Htpasswd); err != nil {
			return nil, err
		}
	}
	if len(cfg.Users) == 0 && ht == nil {
		return nil, nil
	}
	users := cfg.Users
	return func(user, password string) bool {
		if want, found := users[user]; found {
			return subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
		}
		return ht != nil && ht.Authenticate(user, password)
	}, nil
}
