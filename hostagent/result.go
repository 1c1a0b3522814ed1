package hostagent

import (
	"time"

	"github.com/ethfab/ethfab/hostagent/omx"
)

// Result is what one agent did. Every *_ms field counts milliseconds since
// the agent's epoch; a null one never happened. Scripts depend on the JSON
// names iface, mac_before, mac_after, dmp_ms, peers, connect.attempted and
// connect.succeeded.
type Result struct {
	Name      string `json:"name,omitempty"`
	NetNS     string `json:"netns,omitempty"`
	Iface     string `json:"iface"`
	MACBefore string `json:"mac_before"`
	MACAfter  string `json:"mac_after"`

	// DMPMs is the exchange's duration, first request to reply;
	// DMPRTTMs is the answered request's round trip; DMPDoneMs is when
	// the new address was set.
	DMPMs       *float64 `json:"dmp_ms"`
	DMPRTTMs    *float64 `json:"dmp_rtt_ms,omitempty"`
	DMPDoneMs   *float64 `json:"dmp_done_ms,omitempty"`
	DMPAttempts int      `json:"dmp_attempts"`
	DMPError    string   `json:"dmp_error,omitempty"`

	Serial            uint32 `json:"serial"`
	AnnouncementsSent int    `json:"announcements_sent"`
	Rounds            int    `json:"rounds"`
	PeerMACFrom       string `json:"peer_mac_from"`
	Peers             int    `json:"peers"`
	// PeersFullMs is when the table first held Options.ExpectPeers peers.
	PeersFullMs *float64   `json:"peers_full_ms,omitempty"`
	PeerTable   []omx.Peer `json:"peer_table,omitempty"`

	Connect  ConnectResult `json:"connect"`
	Received Received      `json:"received"`
	Drops    Drops         `json:"drops"`
	// SendErrors counts frames the kernel refused.
	SendErrors int     `json:"send_errors"`
	RecvErrors int     `json:"recv_errors"`
	Events     []Event `json:"events,omitempty"`
	DurationMs float64 `json:"duration_ms"`
	Complete   bool    `json:"complete"`
	Error      string  `json:"error,omitempty"`
}

// ConnectResult counts the connect check by peer: attempted peers got at
// least one request, succeeded ones answered, failed = attempted -
// succeeded.
type ConnectResult struct {
	Attempted int `json:"attempted"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Requests  int `json:"requests"` // request frames sent
	Served    int `json:"served"`   // requests from peers answered
	// FirstMs/LastMs: first and latest successful connection; AllMs: when
	// Options.ExpectPeers (or ConnectLimit) peers had answered.
	FirstMs *float64      `json:"first_ms,omitempty"`
	LastMs  *float64      `json:"last_ms,omitempty"`
	AllMs   *float64      `json:"all_ms,omitempty"`
	Peers   []ConnectedAt `json:"peers,omitempty"`
}

// ConnectedAt is one peer's first successful connection.
type ConnectedAt struct {
	MAC string  `json:"mac"`
	Ms  float64 `json:"ms"`
}

// Received counts frames the agent understood.
type Received struct {
	DMP             int `json:"dmp"`
	Announcements   int `json:"announcements"`
	ConnectRequests int `json:"connect_requests"`
	ConnectReplies  int `json:"connect_replies"`
	Self            int `json:"self"` // own announcements that came back
}

// Drops counts frames ignored. BadPeerAddr is Open-MX's
// DROP_BAD_PEER_ADDR: a connect frame from a source not in the peer table.
// Socket counts frames the kernel dropped for want of buffer.
type Drops struct {
	BadPeerAddr int `json:"bad_peer_addr"`
	Malformed   int `json:"malformed"`
	Foreign     int `json:"foreign"`
	Unexpected  int `json:"unexpected"` // replies to nothing we asked
	OtherHost   int `json:"other_host"` // connect frames for another MAC
	// PeerTableFull and PeerConflict count announcements the peer table
	// turned away (omx.Refused, omx.Conflict); PeerMismatch counts connect
	// frames whose peer index or serial is not their source's entry's.
	PeerTableFull int    `json:"peer_table_full"`
	PeerConflict  int    `json:"peer_conflict"`
	PeerMismatch  int    `json:"peer_mismatch"`
	Socket        uint32 `json:"socket"`
}

// Event is one timestamped step.
type Event struct {
	Ms     float64 `json:"ms"`
	Kind   string  `json:"kind"`
	Detail string  `json:"detail,omitempty"`
}

// maxEvents bounds the event log: a thousand agents share one process.
const maxEvents = 32

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func msp(d time.Duration) *float64 { v := ms(d); return &v }
