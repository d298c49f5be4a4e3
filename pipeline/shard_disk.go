package pipeline

import (
	"context"
	"errors"

	"github.com/airlock-mirror/airlock/mirror"
)

// diskShard and diskFinish are mirror-to-disk's shards (not yet: checkSharding
// refuses them).
func (r *run) diskShard(ctx context.Context, src *mirror.SourceMux, sh mirror.Shard) error {
	return errors.New("sharded mirror-to-disk is not supported yet")
}

func (r *run) diskFinish(ctx context.Context) error {
	return errors.New("sharded mirror-to-disk is not supported yet")
}
