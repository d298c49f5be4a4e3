//go:build containers_image_openpgp

package sigpolicy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/containers/image/v5/docker"
	"github.com/containers/image/v5/docker/reference"
	"github.com/containers/image/v5/image"
	"github.com/containers/image/v5/manifest"
	"github.com/containers/image/v5/signature"
	"github.com/containers/image/v5/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Checker evaluates one policy for the images of a run. It is safe for
// concurrent use (each evaluation has a policy context of its own, as
// containers/image requires).
type Checker struct {
	policy  *signature.Policy
	file    string
	keys    [][]byte
	opts    Options
	src     Source
	timeout time.Duration

	once   sync.Once
	sys    *types.SystemContext
	sysErr error
}

// Open reads the policy o names and checks it (and the key files it names)
// without touching the network or writing a file. It returns nil (and no
// error) when o asks for no policy. Errors name the file and what to do.
// Close the Checker when done.
func Open(o Options, s Source) (*Checker, error) {
	if !o.Enabled() {
		return nil, nil
	}
	file, err := o.policyFile()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", file, err)
	}
	policy, err := signature.NewPolicyFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("policy %s is not a valid containers-policy.json: %v (man containers-policy.json; docs/signatures.md has examples)", file, err)
	}
	keys, err := inspect(file, raw)
	if err != nil {
		return nil, err
	}
	if err := o.checkRegistriesD(); err != nil {
		return nil, err
	}
	c := &Checker{policy: policy, file: file, keys: keys, opts: o, src: s, timeout: s.Timeout}
	if c.timeout <= 0 {
		c.timeout = defaultTimeout
	}
	return c, nil
}

// system is the containers/image configuration the evaluations share, made
// on first use: the images are read where airlock reads them (through the
// same registries.conf), their signatures where the registries.d folder says.
func (c *Checker) system() (*types.SystemContext, error) {
	c.once.Do(func() {
		regD := c.opts.RegistriesDir
		if regD == "" {
			regD = c.src.DefaultRegistriesDir
			if c.sysErr = writeDefaultRegistriesD(regD); c.sysErr != nil {
				return
			}
		}
		c.sys = &types.SystemContext{
			AuthFilePath: c.src.AuthFile, DockerCertPath: c.src.CertDir, RegistriesDirPath: regD,
			SystemRegistriesConfPath: c.src.RegistriesConf, DockerRegistryUserAgent: "airlock",
		}
		if c.src.Insecure {
			c.sys.DockerInsecureSkipTLSVerify = types.OptionalBoolTrue
		}
	})
	return c.sys, c.sysErr
}

// File is the policy file the Checker evaluates.
func (c *Checker) File() string { return c.file }

// ClusterKey is the sigstore public key the policy requires (its
// sigstoreSigned keyPath, keyPaths, keyData or keyDatas) when it names exactly
// one, with where it comes from; nil when it names none or several, or for a
// nil Checker (no policy).
func (c *Checker) ClusterKey() ([]byte, string) {
	if c == nil || len(c.keys) != 1 {
		return nil, ""
	}
	return c.keys[0], "the sigstore key of --policy " + c.file
}

// Verifier is c.Check, or nil for a nil Checker (no policy).
func (c *Checker) Verifier() func(context.Context, string, digest.Digest) error {
	if c == nil {
		return nil
	}
	return c.Check
}

// Check evaluates the policy for repo@d ("host/path", a source image by its
// digest) as `skopeo copy --all` does before it copies: a single image is
// judged itself, an index by each of its instances (CRI-O, pulling one
// platform, judges that instance). nil means accepted; the error is the
// policy's reason, naming the image.
func (c *Checker) Check(ctx context.Context, repo string, d digest.Digest) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	name := repo + "@" + d.String()
	ref, err := docker.ParseReference("//" + name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	sys, err := c.system()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !c.src.Insecure && oci.IsLoopbackHost(reference.Domain(ref.DockerReference())) {
		// Plain HTTP, as airlock's registry client allows for loopback.
		own := *sys
		own.DockerInsecureSkipTLSVerify = types.OptionalBoolTrue
		sys = &own
	}
	src, err := ref.NewImageSource(ctx, sys)
	if err != nil {
		return fmt.Errorf("%s: reading it for the signature policy: %w", name, err)
	}
	defer src.Close()
	top := image.UnparsedInstance(src, nil)
	raw, mt, err := top.Manifest(ctx)
	if err != nil {
		return fmt.Errorf("%s: reading it for the signature policy: %w", name, err)
	}
	if !manifest.MIMETypeIsMultiImage(mt) {
		return c.allowed(ctx, name, top)
	}
	list, err := manifest.ListFromBlob(raw, mt)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, inst := range list.Instances() {
		if err := c.allowed(ctx, name+" (instance "+inst.String()+")", image.UnparsedInstance(src, &inst)); err != nil {
			return err
		}
	}
	return nil
}

// allowed runs one evaluation with a policy context of its own.
func (c *Checker) allowed(ctx context.Context, name string, img types.UnparsedImage) error {
	pc, err := signature.NewPolicyContext(c.policy)
	if err != nil {
		return fmt.Errorf("policy %s: %w", c.file, err)
	}
	defer func() { _ = pc.Destroy() }()
	ok, err := pc.IsRunningImageAllowed(ctx, img)
	if ok && err == nil {
		return nil
	}
	if err == nil {
		err = errors.New("not allowed")
	}
	msg := fmt.Sprintf("%s rejected by the signature policy %s: %v", name, c.file, err)
	if c.opts.RegistriesDir != "" && strings.Contains(err.Error(), "no signature exists") {
		msg += " (sigstore signatures are read from the registry only where the --registries.d configuration sets use-sigstore-attachments: true)"
	}
	return errors.New(msg)
}
