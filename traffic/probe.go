package traffic

// Probes (FlagProbe) are small frames the host agent sends between chosen
// pairs at fixed ticks beside a run's traffic, seed 002's "ping frame ...
// at every 100 mseconds" (hostagent/traffic/probe.go sends and counts
// them). These are what they found, as a run's metrics keep it.

// ProbeResult is what a run's probes found.
type ProbeResult struct {
	IntervalMs float64 `json:"interval_ms"`
	FrameSize  int     `json:"frame_bytes"`
	// Ticks is the probes each pair was to get.
	Ticks    int    `json:"ticks"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// Lost counts the ticks without an answer: dropped in the fabric,
	// refused by the host's full link queue (Refused), or never sent.
	Lost       uint64 `json:"lost"`
	Refused    uint64 `json:"refused"`
	Duplicates uint64 `json:"duplicates"`
	// PairsLosing is how many pairs lost any probe; MaxLost the most one
	// pair lost; LongestOutageS the longest run of lost probes (from the
	// first lost to the next answered).
	PairsLosing    int     `json:"pairs_losing"`
	MaxLost        int     `json:"max_lost"`
	LongestOutageS float64 `json:"longest_outage_s"`
	// One-way latency of the probes received, µs.
	P50US float64     `json:"p50_us"`
	P99US float64     `json:"p99_us"`
	MaxUS float64     `json:"max_us"`
	Pairs []ProbePair `json:"pairs"`
}

// ProbePair is one pair's probes.
type ProbePair struct {
	Src      string        `json:"src"`
	Dst      string        `json:"dst"`
	Sent     int           `json:"sent"`
	Received int           `json:"received"`
	Lost     int           `json:"lost"`
	Refused  int           `json:"refused,omitempty"`
	P50US    float64       `json:"p50_us"`
	MaxUS    float64       `json:"max_us"`
	Outages  []ProbeOutage `json:"outages,omitempty"`
}

// ProbeOutage is a run of consecutive lost probes of a pair: from the
// first lost one's tick to the tick of the next one answered (the end of
// the ticks if none was), in seconds since the run's traffic started.
type ProbeOutage struct {
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	Lost  int     `json:"lost"`
}
