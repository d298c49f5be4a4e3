package differential

// Case is one channel configuration of release/graph's Choose goldens
// (release/graph/testdata/choose/<Name>.golden), as an ImageSetConfiguration's
// mirror.platform stanza both tools read.
type Case struct {
	Name string
	// OCMirrorFixtures: the graphs are oc-mirror's own e2e fixtures (their
	// payloads are named by tag), not the ones built from cincinnati-graph-data.
	OCMirrorFixtures bool
	// AllowConditional is airlock's --allow-conditional-updates (oc-mirror
	// has no such choice: it never takes a conditional edge).
	AllowConditional bool
	// Platform is the mirror.platform stanza, indented under "platform:".
	Platform string
}

// Cases are the configurations compared, one per Choose golden.
var Cases = []Case{
	{Name: "head", Platform: "channels:\n- name: stable-4.15\n"},
	{Name: "head-shortestpath", Platform: "channels:\n- name: stable-4.15\n  shortestPath: true\n"},
	{Name: "full", Platform: "channels:\n- name: stable-4.15\n  full: true\n"},
	{Name: "min-only", Platform: "channels:\n- name: stable-4.16\n  minVersion: 4.16.50\n"},
	{Name: "max-only", Platform: "channels:\n- name: stable-4.15\n  maxVersion: 4.14.6\n"},
	{Name: "range", Platform: "channels:\n- name: stable-4.15\n  minVersion: 4.15.0\n  maxVersion: 4.15.6\n"},
	{Name: "range-with-risks", Platform: "channels:\n- name: eus-4.16\n  minVersion: 4.16.28\n  maxVersion: 4.16.40\n"},
	{Name: "range-across-minors", Platform: "channels:\n- name: stable-4.16\n  minVersion: 4.15.59\n  maxVersion: 4.16.3\n"},
	{Name: "shortestpath", Platform: "channels:\n- name: stable-4.15\n  minVersion: 4.15.0\n  maxVersion: 4.15.20\n  shortestPath: true\n"},
	{Name: "err-shortestpath-risky-range", Platform: "channels:\n- name: eus-4.16\n  minVersion: 4.16.28\n  maxVersion: 4.16.41\n  shortestPath: true\n"},
	{Name: "shortestpath-conditional", AllowConditional: true, Platform: "channels:\n- name: stable-4.15\n  minVersion: 4.14.5\n  maxVersion: 4.15.2\n  shortestPath: true\n"},
	{Name: "shortestpath-across-minors", Platform: "channels:\n- name: eus-4.16\n  minVersion: 4.14.10\n  maxVersion: 4.16.20\n  shortestPath: true\n"},
	{Name: "eus-heads", Platform: "channels:\n- name: eus-4.14\n  minVersion: 4.14.70\n  maxVersion: 4.14.70\n- name: eus-4.16\n"},
	{Name: "eus-ranges", Platform: "channels:\n- name: eus-4.14\n  minVersion: 4.14.38\n  maxVersion: 4.14.40\n- name: eus-4.16\n  minVersion: 4.16.28\n  maxVersion: 4.16.30\n"},
	{Name: "eus-ranges-conditional", AllowConditional: true, Platform: "channels:\n- name: eus-4.14\n  minVersion: 4.14.38\n  maxVersion: 4.14.40\n- name: eus-4.16\n  minVersion: 4.16.32\n  maxVersion: 4.16.33\n"},
	{Name: "err-eus-ranges-unconditional", Platform: "channels:\n- name: eus-4.14\n  minVersion: 4.14.38\n  maxVersion: 4.14.40\n- name: eus-4.16\n  minVersion: 4.16.32\n  maxVersion: 4.16.33\n"},
	{Name: "eus-through-stable", Platform: "channels:\n- name: stable-4.14\n  minVersion: 4.14.20\n  maxVersion: 4.14.20\n- name: stable-4.16\n  minVersion: 4.16.10\n  maxVersion: 4.16.10\n"},
	{Name: "same-minor-channels", Platform: "channels:\n- name: stable-4.16\n- name: eus-4.16\n  minVersion: 4.16.60\n  maxVersion: 4.16.60\n"},
	{Name: "architectures", Platform: "architectures: [arm64, s390x]\nchannels:\n- name: stable-4.15\n"},
	// oc-mirror refuses a platform without os (airlock reads linux).
	{Name: "platforms-multi", Platform: "platforms:\n- os: linux\n  architecture: arm64\nchannels:\n- name: eus-4.16\n"},
	{Name: "ocmirror-head", OCMirrorFixtures: true, Platform: "channels:\n- name: stable-4.0\n"},
	{Name: "ocmirror-full", OCMirrorFixtures: true, Platform: "channels:\n- name: stable-4.0\n  full: true\n"},
	{Name: "ocmirror-shortestpath", OCMirrorFixtures: true, Platform: "channels:\n- name: stable-4.0\n  minVersion: 4.0.0-5\n  maxVersion: 4.0.0-8\n  shortestPath: true\n"},
	{Name: "ocmirror-stable-4.15", OCMirrorFixtures: true, Platform: "channels:\n- name: stable-4.15\n  full: true\n"},
	{Name: "err-min-not-in-channel", Platform: "channels:\n- name: stable-4.15\n  minVersion: 4.15.1\n  maxVersion: 4.15.99\n"},
	{Name: "err-unknown-channel", Platform: "channels:\n- name: stable-4.99\n"},
	{Name: "err-eus-head-not-published", Platform: "channels:\n- name: eus-4.14\n- name: eus-4.16\n"},
	{Name: "err-no-unconditional-path", Platform: "channels:\n- name: stable-4.15\n  minVersion: 4.14.5\n  maxVersion: 4.15.2\n  shortestPath: true\n"},
}
