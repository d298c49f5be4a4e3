package registry

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// The sparse index probe tells Debian's Distribution 2.8 (which refuses an
// index naming children it does not hold) from a registry that accepts one,
// leaves no index behind where deletes are allowed, and asks each host once.
func TestAcceptsSparseIndexes(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		accepts bool
	}{
		{registrytest.Distribution28, false},
		{registrytest.DistributionV3, false},
		{registrytest.DistributionV3Sparse, true},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			tg := registrytest.StartKind(t, tc.kind)
			r := New(Options{Retry: mirrortest.FastRetry})
			ctx := context.Background()
			repo := tg.Host + "/scratch/airlock-preflight"
			accepts, refusal, err := r.AcceptsSparseIndexes(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			if accepts != tc.accepts || (refusal == nil) == !accepts {
				t.Fatalf("accepts %v (refusal %v), want %v", accepts, refusal, tc.accepts)
			}
			if refusal != nil && !endpointHas(refusal, endpoint.CodeManifestBlobUnknown, endpoint.CodeManifestInvalid, endpoint.CodeBlobUnknown) {
				t.Errorf("refusal %v carries no code of a missing child", refusal)
			}
			if ok, err := r.ManifestExists(ctx, repo, sparseProbeIndex().Digest.String(), sparseProbeIndex().Digest); err != nil || ok {
				t.Errorf("the probe's index is still there (%v, %v)", ok, err)
			}
		})
	}
	t.Run("once per host", func(t *testing.T) {
		reg := registrytest.Start(t)
		r := New(Options{Retry: mirrortest.FastRetry})
		for _, repo := range []string{"a/airlock-preflight", "b/other"} {
			if _, _, err := r.AcceptsSparseIndexes(context.Background(), reg.Host()+"/"+repo); err != nil {
				t.Fatal(err)
			}
		}
		if n := reg.Counts().ManifestPUT; n != 1 {
			t.Errorf("%d manifest PUTs for two questions about one host, want 1", n)
		}
	})
	t.Run("cannot tell", func(t *testing.T) {
		r := New(Options{Retry: mirrortest.FastRetry})
		_, _, err := r.AcceptsSparseIndexes(context.Background(), registrytest.ClosedAddr(t)+"/a/b")
		if err == nil {
			t.Fatal("a registry that is down answered the probe")
		}
	})
}

func endpointHas(err error, codes ...endpoint.ErrorCode) bool {
	var re *endpoint.RegistryError
	return errors.As(err, &re) && re.Has(codes...)
}
