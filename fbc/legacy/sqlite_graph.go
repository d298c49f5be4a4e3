package legacy

import (
	"sort"
)

// bundleRow is one bundle in one channel, with the upgrade edges opm v1.73 gives
// it when it lists the bundles of a database (its ListBundles query).
type bundleRow struct {
	minID             int64
	bundle, pkg, chnl string
	replaces          string
	skips             []string
}

// rowKey identifies a bundle in a channel of a package.
type rowKey struct{ bundle, pkg, channel string }

// channelRows works out, from the channel_entry table, the replaces and skips of
// every bundle in every channel, the way opm v1.73 reads them:
//
//   - the replaces chain starts at every entry of the smallest depth of the whole
//     table (the channel heads) and follows the replaces column;
//   - a bundle replaces the greatest (by byte order) name its entries on that
//     chain replace;
//   - every other replaces edge of its entries is a skip, in entry order.
//
// Rows are returned sorted by their first entry id. Entries with a NULL bundle,
// package or channel name are ignored.
func channelRows(entries []entryRow) []*bundleRow {
	byID := make(map[int64]*entryRow, len(entries))
	var tip int64
	haveTip := false
	for i := range entries {
		e := &entries[i]
		byID[e.id] = e
		if e.depth.Valid && (!haveTip || e.depth.Int64 < tip) {
			tip, haveTip = e.depth.Int64, true
		}
	}
	// The entries on the replaces chains from the tip.
	chain := map[int64]bool{}
	if haveTip {
		var stack []int64
		for i := range entries {
			if e := &entries[i]; e.depth.Valid && e.depth.Int64 == tip && !chain[e.id] {
				chain[e.id] = true
				stack = append(stack, e.id)
			}
		}
		for len(stack) > 0 {
			e := byID[stack[len(stack)-1]]
			stack = stack[:len(stack)-1]
			if !e.replaces.Valid {
				continue
			}
			next, ok := byID[e.replaces.Int64]
			if !ok || chain[next.id] {
				continue
			}
			chain[next.id] = true
			stack = append(stack, next.id)
		}
	}
	rows := map[rowKey]*bundleRow{}
	var out []*bundleRow
	hasReplaces := map[rowKey]bool{}
	for i := range entries {
		e := &entries[i]
		if !e.bundle.Valid || !e.pkg.Valid || !e.channel.Valid {
			continue
		}
		k := rowKey{e.bundle.String, e.pkg.String, e.channel.String}
		r, ok := rows[k]
		if !ok {
			r = &bundleRow{minID: e.id, bundle: k.bundle, pkg: k.pkg, chnl: k.channel}
			rows[k] = r
			out = append(out, r)
		} else if e.id < r.minID {
			r.minID = e.id
		}
		if !e.replaces.Valid {
			continue
		}
		target, ok := byID[e.replaces.Int64]
		if chain[e.id] {
			if ok && target.bundle.Valid && (!hasReplaces[k] || target.bundle.String > r.replaces) {
				r.replaces, hasReplaces[k] = target.bundle.String, true
			}
			continue
		}
		if ok && target.bundle.Valid {
			r.skips = append(r.skips, target.bundle.String)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].minID < out[j].minID })
	return out
}
