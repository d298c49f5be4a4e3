package registry

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/containers/image/v5/types"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

// ErrAuthConfig is returned (wrapped) when the credentials configuration
// cannot be used: an --authfile or $REGISTRY_AUTH_FILE that does not exist, an
// auth file that is not valid JSON (named with its line), a credential helper
// that fails. It is never reported as an unreachable registry, and it is
// permanent: another attempt cannot fix it.
var ErrAuthConfig = errors.New("registry credentials configuration")

// AuthKeychain returns an authn.Keychain that looks credentials up the way podman
// and skopeo do (containers/image pkg/docker/config):
//
//  1. authFile, when set (--authfile), else $REGISTRY_AUTH_FILE, when set: that
//     file only, which must exist;
//  2. otherwise ${XDG_RUNTIME_DIR}/containers/auth.json,
//     ~/.config/containers/auth.json ($XDG_CONFIG_HOME), ~/.docker/config.json
//     ($DOCKER_CONFIG/config.json), ~/.dockercfg, in that order;
//  3. credential helpers named in those files: credHelpers (per registry) and
//     credsStore (every other registry), run as docker-credential-NAME from
//     $PATH, and credential-helpers in registries.conf.
//
// Keys may be a registry ("quay.io") or a namespace ("quay.io/ns"); the most
// specific match wins. Registries without credentials are accessed anonymously.
// Every file consulted is checked first: a malformed one is an ErrAuthConfig
// naming the file and line. Credentials never appear in errors or logs.
func AuthKeychain(authFile string) authn.Keychain {
	return &containersKeychain{flag: authFile}
}

type containersKeychain struct {
	flag    string // --authfile
	regconf string // the registries.conf whose credential-helpers apply ("": see init)

	once  sync.Once
	err   error
	sys   *types.SystemContext
	files []authFileInfo // the files consulted, in order, that exist

	mu     sync.Mutex
	byHost map[string]types.DockerAuthConfig // hosts whose repositories share one answer (credentialsOf)
}

// init resolves which files are consulted and checks each of them once.
func (k *containersKeychain) init() {
	path, from := k.flag, "--authfile"
	if path == "" {
		path, from = os.Getenv("REGISTRY_AUTH_FILE"), "$REGISTRY_AUTH_FILE"
	}
	rc, _ := registriesConfPath(k.regconf)
	k.sys = &types.SystemContext{AuthFilePath: path, SystemRegistriesConfPath: rc, SystemRegistriesConfDirPath: dropInDir}
	candidates := []authFileCandidate{{path: path}}
	if path == "" {
		candidates = defaultAuthFiles()
	} else if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			k.err = fmt.Errorf("%w: %s %s does not exist: give the path of an existing auth file (podman login --authfile %s REGISTRY writes one)", ErrAuthConfig, from, path, path)
		} else {
			k.err = fmt.Errorf("%w: %s %s: %v", ErrAuthConfig, from, path, err)
		}
		return
	}
	for _, c := range candidates {
		info, err := readAuthFile(c)
		if err != nil {
			k.err = fmt.Errorf("%w: %v", ErrAuthConfig, err)
			return
		}
		if info != nil {
			k.files = append(k.files, *info)
		}
	}
}

// Resolve implements authn.Keychain. The resource is a registry or a repository.
func (k *containersKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	k.once.Do(k.init)
	if k.err != nil {
		return nil, retry.Permanent(k.err)
	}
	key := res.String()
	host := res.RegistryStr()
	if host == "index.docker.io" || host == "registry-1.docker.io" {
		key = "docker.io" + strings.TrimPrefix(key, host)
		host = "docker.io"
	}
	key = strings.TrimSuffix(key, "/")
	cred, err := k.credentialsOf(key, host)
	if err != nil {
		return nil, err
	}
	if cred.Username == "" && cred.Password == "" && cred.IdentityToken == "" {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{
		Username:      cred.Username,
		Password:      cred.Password,
		IdentityToken: cred.IdentityToken,
	}), nil
}

// credentialsOf finds the credentials of key (a registry or a repository on
// host). Where they are looked up, only an auth file's auths entry naming a
// namespace or repository of host ("quay.io/ns") tells one repository of host
// from another: credHelpers, credsStore and the credential helpers of
// registries.conf are asked about the host. So when no auth file names a
// namespace of host, the answer found for one of its repositories is every
// one's, and it is looked up once per host (a re-run of 20,000 images in
// 7,000 repositories read the auth files 14,000 times). Errors are not kept.
func (k *containersKeychain) credentialsOf(key, host string) (types.DockerAuthConfig, error) {
	shared := !k.namesNamespaceOf(host)
	if shared {
		k.mu.Lock()
		cred, ok := k.byHost[host]
		k.mu.Unlock()
		if ok {
			return cred, nil
		}
	}
	cred, err := k.lookup(key, host)
	if err != nil {
		// containers/image errors name files and helpers, never credential values.
		return cred, retry.Permanent(fmt.Errorf("%w: look up credentials for %s%s: %v", ErrAuthConfig, key, k.where(), err))
	}
	if cred == (types.DockerAuthConfig{}) {
		// containers/image does not know docker's credsStore: the helper docker
		// uses for every registry that credHelpers does not name.
		for _, f := range k.files {
			if f.credsStore == "" {
				continue
			}
			if cred, err = helperCredentials(f.credsStore, host); err != nil {
				return cred, retry.Permanent(fmt.Errorf("%w: credsStore %q in %s: %v", ErrAuthConfig, f.credsStore, f.path, err))
			}
			break
		}
	}
	if shared {
		k.mu.Lock()
		if k.byHost == nil {
			k.byHost = map[string]types.DockerAuthConfig{}
		}
		k.byHost[host] = cred
		k.mu.Unlock()
	}
	return cred, nil
}

// namesNamespaceOf reports whether an auth file's auths names a namespace or
// repository of host (a key "host/..."), in any of the forms hasAuth accepts.
func (k *containersKeychain) namesNamespaceOf(host string) bool {
	for _, f := range k.files {
		for _, a := range f.auths {
			if strings.HasPrefix(a, "https://") || strings.HasPrefix(a, "http://") {
				continue // a URL names its host alone ("https://quay.io/v1/")
			}
			if strings.HasPrefix(a, host+"/") && len(a) > len(host)+1 {
				return true
			}
		}
	}
	return false
}

// where names the auth file in errors, when one was given.
func (k *containersKeychain) where() string {
	if k.sys.AuthFilePath == "" {
		return ""
	}
	return " (auth file " + k.sys.AuthFilePath + ")"
}

// repoResource is an authn.Resource for a "host/path" repository.
type repoResource struct{ host, repo string }

func (r repoResource) String() string      { return r.repo }
func (r repoResource) RegistryStr() string { return r.host }

// consulted names the auth files the keychain read, for messages ("" when
// it read none, or is not the containers keychain).
func (k *containersKeychain) consulted() string {
	k.once.Do(k.init)
	var paths []string
	for _, f := range k.files {
		paths = append(paths, f.path)
	}
	return strings.Join(paths, ", ")
}

// credentialsHint says, for a registry that refused access (401 or 403) to
// repo, whether airlock sent credentials and from where, and what to do:
// "no credentials" and "wrong credentials" are different problems.
func (r *Client) credentialsHint(code int, host, repo string) string {
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	read := ""
	if k, ok := r.keychain.(*containersKeychain); ok {
		read = k.consulted()
	}
	a, err := r.keychain.Resolve(repoResource{host: host, repo: repo})
	if err == nil && a == authn.Anonymous {
		if read == "" {
			return fmt.Sprintf("%s: the registry wants credentials and airlock has none: no auth file was found (looked for --authfile, $REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json); log in (podman login %s) or pass --authfile FILE", status, host)
		}
		return fmt.Sprintf("%s: the registry wants credentials and %s has none for %s: log in (podman login --authfile FILE %s) or add them to that file", status, read, host, host)
	}
	from := read
	if from == "" {
		from = "the configured keychain"
	}
	if code == http.StatusForbidden {
		return fmt.Sprintf("%s: the registry accepted the credentials for %s from %s but denies this account access to %s: use an account with the rights needed (pull, or push for a destination)", status, host, from, repo)
	}
	return fmt.Sprintf("%s: the registry refused the credentials for %s from %s (wrong user name, password or token, or expired): log in again (podman login --authfile FILE %s)", status, host, from, host)
}
