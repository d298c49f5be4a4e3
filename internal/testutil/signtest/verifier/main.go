//go:build containers_image_openpgp

// Command verifier is the consumer signtest runs: it decides, with
// containers/image (the library skopeo, podman and CRI-O use), whether an
// image may be pulled: the reference is read through a registries.conf
// (mirrors), its sigstore attachments through a registries.d, and judged by a
// policy.json, exactly as `skopeo copy` does before it copies (Debian's skopeo
// 1.9.3 has sigstore compiled out). It needs the containers_image_openpgp build
// tag (no gpgme), so normal builds, go vet and the layering test skip it;
// signtest builds it with the tag.
//
//	verifier REGISTRIES_CONF REGISTRIES_D POLICY_JSON docker://REF
//
// Exit status 0 when the policy accepts the image (each instance of an index
// too, as a pull of one platform would need), 1 with the reason otherwise.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/containers/image/v5/docker"
	"github.com/containers/image/v5/image"
	"github.com/containers/image/v5/manifest"
	"github.com/containers/image/v5/signature"
	"github.com/containers/image/v5/types"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("usage: verifier REGISTRIES_CONF REGISTRIES_D POLICY_JSON docker://REF")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sys := &types.SystemContext{SystemRegistriesConfPath: args[0], RegistriesDirPath: args[1]}
	policy, err := signature.NewPolicyFromFile(args[2])
	if err != nil {
		return err
	}
	pc, err := signature.NewPolicyContext(policy)
	if err != nil {
		return err
	}
	defer pc.Destroy()
	ref, err := docker.ParseReference(strings.TrimPrefix(args[3], "docker:"))
	if err != nil {
		return err
	}
	src, err := ref.NewImageSource(ctx, sys)
	if err != nil {
		return err
	}
	defer src.Close()
	top := image.UnparsedInstance(src, nil)
	if _, err := pc.IsRunningImageAllowed(ctx, top); err != nil {
		return fmt.Errorf("source image rejected: %w", err)
	}
	raw, mt, err := top.Manifest(ctx)
	if err != nil {
		return err
	}
	if !manifest.MIMETypeIsMultiImage(mt) {
		return nil
	}
	list, err := manifest.ListFromBlob(raw, mt)
	if err != nil {
		return err
	}
	for _, d := range list.Instances() {
		if _, err := pc.IsRunningImageAllowed(ctx, image.UnparsedInstance(src, &d)); err != nil {
			return fmt.Errorf("instance %s rejected: %w", d, err)
		}
	}
	return nil
}
