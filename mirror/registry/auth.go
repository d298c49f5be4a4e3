package registry

import (
	"fmt"
	"strings"

	"github.com/containers/image/v5/pkg/docker/config"
	"github.com/containers/image/v5/types"
	"github.com/google/go-containerregistry/pkg/authn"
)

// AuthKeychain returns an authn.Keychain that looks credentials up the way podman
// and skopeo do (containers/image pkg/docker/config):
//
//  1. authFile, when set (--authfile);
//  2. otherwise $REGISTRY_AUTH_FILE, ${XDG_RUNTIME_DIR}/containers/auth.json,
//     ~/.config/containers/auth.json, ~/.docker/config.json, ~/.dockercfg;
//  3. credential helpers named in those files (credHelpers / credsStore) and in
//     registries.conf.
//
// Keys may be a registry ("quay.io") or a namespace ("quay.io/ns"); the most
// specific match wins. Registries without credentials are accessed anonymously.
// Credentials never appear in errors or logs.
func AuthKeychain(authFile string) authn.Keychain {
	return &containersKeychain{sys: &types.SystemContext{AuthFilePath: authFile}}
}

type containersKeychain struct{ sys *types.SystemContext }

// Resolve implements authn.Keychain. The resource is a registry or a repository.
func (k *containersKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	key := res.String()
	host := res.RegistryStr()
	if host == "index.docker.io" || host == "registry-1.docker.io" {
		key = "docker.io" + strings.TrimPrefix(key, host)
	}
	key = strings.TrimSuffix(key, "/")
	cred, err := config.GetCredentials(k.sys, key)
	if err != nil {
		// containers/image errors name files and helpers, never credential values.
		return nil, fmt.Errorf("look up credentials for %s (auth file %q): %w", key, k.sys.AuthFilePath, err)
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

// repoResource is an authn.Resource for a "host/path" repository.
type repoResource struct{ host, repo string }

func (r repoResource) String() string      { return r.repo }
func (r repoResource) RegistryStr() string { return r.host }
