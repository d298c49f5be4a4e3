//go:build containers_image_openpgp

package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
)

// writePolicy writes a containers-policy.json: reject by default, scopes for
// the docker transport.
func writePolicy(t *testing.T, def string, scopes map[string]any) string {
	t.Helper()
	doc := map[string]any{"default": []any{map[string]any{"type": def}}}
	if scopes != nil {
		doc["transports"] = map[string]any{"docker": scopes}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSignaturePolicy: --policy judges every source image before it is copied.
// With a policy requiring the signing key, the signed image and the index
// signed recursively are mirrored (and pull through the mirror as CRI-O
// would), the unsigned and the tampered ones fail with the policy's reason and
// are not copied, nor are their attachments; the ClusterImagePolicy takes the
// policy's key. reject refuses all, insecureAcceptAnything none; a dry run
// judges too.
func TestSignaturePolicy(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	requireKey := writePolicy(t, "reject", map[string]any{e.src.Host(): []any{map[string]any{
		"type": "sigstoreSigned", "keyPath": e.key.Public, "signedIdentity": map[string]any{"type": "matchRepository"}}}})
	all := []string{e.ref(e.index), e.ref(e.signed), e.ref(e.tampered), e.ref(e.unsigned)}
	sort.Strings(all)
	for _, tc := range []struct {
		name        string
		policy      string
		dryRun      bool
		failed      []string
		attachments int
	}{
		{"sigstore key", requireKey, false, []string{e.ref(e.tampered), e.ref(e.unsigned)}, 5},
		{"sigstore key, dry run", requireKey, true, []string{e.ref(e.tampered), e.ref(e.unsigned)}, 5},
		{"reject", writePolicy(t, "reject", nil), false, all, 0},
		{"insecureAcceptAnything", writePolicy(t, "insecureAcceptAnything", nil), false, nil, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := registrytest.Start(t)
			o := opts(e.cfg)
			o.Destination.Location = location.Docker(dst.Host() + "/mirror")
			o.Workspace = location.File(t.TempDir())
			o.Signatures.Policy.Policy, o.Run.DryRun = tc.policy, tc.dryRun
			res, err := pipeline.Mirror(context.Background(), o)
			if len(tc.failed) > 0 != errors.Is(err, pipeline.ErrIncomplete) && !tc.dryRun {
				t.Fatalf("err = %v, want failures %v", err, tc.failed)
			}
			if res == nil || res.Plan == nil {
				t.Fatalf("no plan: %v", err)
			}
			var failed []string
			attachments := 0
			for _, im := range res.Plan.Images {
				switch {
				case im.Error != "":
					failed = append(failed, im.Source)
					if !strings.Contains(im.Error, "rejected by the signature policy "+tc.policy) || !strings.Contains(im.Error, imagetest.Repo(im.Source)) {
						t.Errorf("%s failed without the policy's reason naming it: %s", im.Source, im.Error)
					}
				case im.Kind == mirror.KindAttachment:
					attachments++
				}
			}
			sort.Strings(failed)
			if fmt.Sprint(failed) != fmt.Sprint(tc.failed) || attachments != tc.attachments {
				t.Errorf("failed %v, attachments %d; want %v, %d", failed, attachments, tc.failed, tc.attachments)
			}
			if tc.name != "sigstore key" {
				return
			}
			if !strings.Contains(fmt.Sprint(res.Images), "rejected by the signature policy") {
				t.Errorf("results do not give the policy's reason: %+v", res.Images)
			}
			checkPolicyKey(t, res, e.key.Public, []string{imagetest.Repo(e.index.Ref), imagetest.Repo(e.signed.Ref)})
			c := signtest.NewConsumer(t, idmsRules(t, res), e.key.Public)
			for _, im := range []imagetest.Pushed{e.signed, e.index} {
				if err := c.Pull(t, e.ref(im)); err != nil {
					t.Errorf("%s does not pull through the mirror: %v", im.Ref, err)
				}
			}
			for _, im := range []imagetest.Pushed{e.unsigned, e.tampered} {
				if n := len(signtest.Referrers(t, dst.Host()+"/mirror/"+strings.TrimPrefix(imagetest.Repo(im.Ref), e.src.Host()+"/"), im.Digest)); n != 0 {
					t.Errorf("refused %s has %d referrers at the destination", im.Ref, n)
				}
			}
		})
	}
}

// What judging by a policy costs: the source requests and the time of a run
// with a policy requiring the key against a run without one (logged for
// docs/signatures.md; the requests are bounded: containers/image opens each
// image once and reads its manifest, each instance's manifest and signatures).
func TestSignaturePolicyCost(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	requireKey := writePolicy(t, "reject", map[string]any{e.src.Host(): []any{map[string]any{
		"type": "sigstoreSigned", "keyPath": e.key.Public, "signedIdentity": map[string]any{"type": "matchRepository"}}}})
	count := func(policy string) (int64, time.Duration) {
		dst := registrytest.Start(t)
		o := opts(e.cfg)
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		o.Workspace = location.File(t.TempDir())
		o.Signatures.Policy.Policy, o.Run.DryRun = policy, true
		e.src.Reset()
		start := time.Now()
		if _, err := pipeline.Mirror(context.Background(), o); err != nil && (policy == "" || !errors.Is(err, pipeline.ErrIncomplete)) {
			t.Fatal(err)
		}
		var n int64
		for _, v := range e.src.Counts().ByPath {
			n += v
		}
		return n, time.Since(start)
	}
	without, tw := count("")
	with, tp := count(requireKey)
	more := with - without
	t.Logf("dry run of 4 images (1 index of 2): %d source requests without --policy (%v), %d with (+%d, %v)", without, tw, with, more, tp)
	// Per image: containers/image's ping and the manifest; per single image
	// or instance judged (5 here): its manifest and its signature's. The two
	// refused images then cost no attachment discovery, so the difference is
	// smaller than what the policy itself asked; 12 per image is generous.
	if more <= 0 || more > 12*4 {
		t.Errorf("%d extra source requests for 4 images", more)
	}
}
