package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/imageset"
)

// ChannelsMetadataKey is the node metadata that lists the channels a release
// is in.
const ChannelsMetadataKey = "io.openshift.upgrades.graph.release.channels"

// ListOptions are airlock list releases' (oc-mirror v2's list releases).
type ListOptions struct {
	// Channel lists its versions (default: stable-<Version>).
	Channel string
	// Channels lists the channels of Version instead.
	Channels bool
	// Version is an X.Y OpenShift version.
	Version string
	// Archs are the architectures listed (default amd64).
	Archs []string
	// Type is the channel type, ocp (default) or okd.
	Type string
	// Select, when it sets a bound, full or shortestPath, lists what a
	// mirror.platform channel with these fields would choose, and its risks.
	Select imageset.ReleaseChannel
	// AllowConditional is ChooseOptions.AllowConditional, for Select.
	AllowConditional bool
}

// Listing is what List found.
type Listing struct {
	o        ListOptions
	channels []string
	archs    []archListing
}

type archListing struct {
	arch     string
	versions []string
	chosen   *Chosen
}

// List answers a list releases question from the update service:
//   - Channels: the channels the releases of stable-<Version> are in;
//   - else the versions of Channel (stable-<Version> by default) for each
//     architecture, or with Select what mirror.platform would choose.
func List(ctx context.Context, f Fetcher, o ListOptions) (*Listing, error) {
	if err := o.complete(); err != nil {
		return nil, err
	}
	l := &Listing{o: o}
	if o.Channels {
		raw, err := f.Fetch(ctx, o.Type, o.Channel, DefaultArch)
		if err != nil {
			return nil, err
		}
		g, err := Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("channel %s: %w", o.Channel, err)
		}
		for _, n := range g.Nodes {
			for _, c := range strings.Split(n.Metadata[ChannelsMetadataKey], ",") {
				if c = strings.TrimSpace(c); c != "" && !slices.Contains(l.channels, c) {
					l.channels = append(l.channels, c)
				}
			}
		}
		if len(l.channels) == 0 {
			return nil, fmt.Errorf("channel %s (%s) has no releases, so no channels for version %s: check the version (X.Y, e.g. 4.18)", o.Channel, o.Type, o.Version)
		}
		slices.Sort(l.channels)
		return l, nil
	}
	var errs []error
	for _, arch := range o.Archs {
		al := archListing{arch: arch}
		if o.selecting() {
			sel := o.Select
			sel.Name, sel.Type = o.Channel, o.Type
			c, err := Choose(ctx, &imageset.Platform{Architectures: []string{arch}, Channels: []imageset.ReleaseChannel{sel}}, f,
				ChooseOptions{AllowConditional: o.AllowConditional, flags: true})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			al.chosen = c
		} else {
			raw, err := f.Fetch(ctx, o.Type, o.Channel, arch)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			g, err := Parse(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("channel %s for %s: %w", o.Channel, arch, err))
				continue
			}
			if len(g.Nodes) == 0 {
				errs = append(errs, fmt.Errorf("channel %s (%s) has no releases for %s: check the name (airlock list releases --channels --version X.Y lists the channels)", o.Channel, o.Type, arch))
				continue
			}
			for _, n := range g.Sorted() {
				al.versions = append(al.versions, g.Nodes[n].Version)
			}
		}
		l.archs = append(l.archs, al)
	}
	return l, errors.Join(errs...)
}

func (o *ListOptions) selecting() bool {
	s := o.Select
	return s.MinVersion != "" || s.MaxVersion != "" || s.Full || s.ShortestPath
}

func (o *ListOptions) complete() error {
	o.Type = cmpOr(o.Type, TypeOCP)
	if o.Type != TypeOCP && o.Type != TypeOKD {
		return fmt.Errorf("--type %q: use ocp or okd", o.Type)
	}
	if o.Version != "" {
		if parts := strings.Split(o.Version, "."); len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			return fmt.Errorf("--version %q: give an OpenShift version X.Y, e.g. 4.18", o.Version)
		}
	}
	switch {
	case o.Channels && o.Version == "":
		return errors.New("--channels needs --version (the channels of which X.Y version?), e.g. --channels --version 4.18")
	case o.Channels:
		o.Channel = "stable-" + o.Version
	case o.Channel == "" && o.Version != "":
		o.Channel = "stable-" + o.Version
	case o.Channel == "":
		return errors.New("give --channel C or --version X.Y (oc-mirror without them lists the X.Y versions from the tags of the release repository; airlock asks the update service, which answers per channel): e.g. --version 4.18, or --channels --version 4.18 for the channels")
	}
	if len(o.Archs) == 0 {
		o.Archs = []string{DefaultArch}
	}
	for _, a := range o.Archs {
		if !slices.Contains(imageset.ReleaseArchitectures, a) {
			return fmt.Errorf("--filter-by-archs: unknown architecture %q; use %s", a, strings.Join(imageset.ReleaseArchitectures, ", "))
		}
	}
	for _, v := range []string{o.Select.MinVersion, o.Select.MaxVersion} {
		if _, err := semver.Parse(v); v != "" && err != nil {
			return fmt.Errorf("%q is not a semantic version (%v); write a full version such as 4.16.3", v, err)
		}
	}
	return nil
}

// Write prints the listing in oc-mirror's shapes.
func (l *Listing) Write(w io.Writer) error {
	o := l.o
	if o.Channels {
		fmt.Fprintf(w, "Listing channels for version %s:\n\n", o.Version)
		for _, c := range l.channels {
			fmt.Fprintln(w, c)
		}
		return nil
	}
	if strings.HasPrefix(o.Channel, "stable") && !o.selecting() {
		fmt.Fprintln(w, "Listing stable channels. Use --channel=<name> to filter.")
		fmt.Fprintf(w, "Use airlock list releases --channels --version=%s to discover other channels.\n\n", cmpOr(o.Version, versionOf(o.Channel)))
	}
	for _, a := range l.archs {
		fmt.Fprintf(w, "Channel: %s\nArchitecture: %s\n", o.Channel, a.arch)
		if a.chosen == nil {
			for _, v := range a.versions {
				fmt.Fprintln(w, v)
			}
			continue
		}
		fmt.Fprintf(w, "Chosen as mirror.platform would (%s):\n", describeSelect(o))
		for _, r := range a.chosen.Releases {
			fmt.Fprintf(w, "%s %s\n", r.Version, r.Payload)
		}
		for _, warn := range a.chosen.Warnings {
			fmt.Fprintf(w, "note: %s\n", warn)
		}
		if len(a.chosen.Risks) > 0 {
			fmt.Fprintf(w, "Conditional updates between chosen versions (%d risks):\n", len(a.chosen.Risks))
			for _, r := range a.chosen.Risks {
				fmt.Fprintf(w, "%s -> %s %s: %s %s\n", r.From, r.To, r.Name, oneLine(r.Message), r.URL)
			}
		}
	}
	return nil
}

// Chosen returns what Select chose for arch (nil without Select).
func (l *Listing) Chosen(arch string) *Chosen {
	for _, a := range l.archs {
		if a.arch == arch {
			return a.chosen
		}
	}
	return nil
}

func describeSelect(o ListOptions) string {
	var parts []string
	s := o.Select
	if s.MinVersion != "" {
		parts = append(parts, "minVersion "+s.MinVersion)
	}
	if s.MaxVersion != "" {
		parts = append(parts, "maxVersion "+s.MaxVersion)
	}
	if s.Full {
		parts = append(parts, "full")
	}
	if s.ShortestPath {
		parts = append(parts, "shortestPath")
	}
	if o.AllowConditional {
		parts = append(parts, "conditional updates allowed")
	}
	return strings.Join(parts, ", ")
}

// versionOf is the X.Y of a channel name such as stable-4.18.
func versionOf(channel string) string {
	if i := strings.LastIndex(channel, "-"); i >= 0 {
		return channel[i+1:]
	}
	return channel
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// DrawChannel draws the update graph of o.Channel for one architecture
// (o.Archs, one at most) with what o.Select chooses highlighted (the head
// without Select).
func DrawChannel(ctx context.Context, f Fetcher, o ListOptions, d DrawOptions) (*Picture, error) {
	if o.Channels {
		return nil, errors.New("--graph draws a channel: give --channel C (or --version X.Y), not --channels")
	}
	if err := o.complete(); err != nil {
		return nil, err
	}
	if len(o.Archs) != 1 {
		return nil, fmt.Errorf("--graph draws one architecture; give one in --filter-by-archs (got %s)", strings.Join(o.Archs, ","))
	}
	sel := o.Select
	sel.Name, sel.Type = o.Channel, o.Type
	c, err := Choose(ctx, &imageset.Platform{Architectures: o.Archs, Channels: []imageset.ReleaseChannel{sel}}, f,
		ChooseOptions{AllowConditional: o.AllowConditional, flags: true})
	if err != nil {
		return nil, err
	}
	return Draw(c, o.Type, o.Channel, o.Archs[0], d)
}
