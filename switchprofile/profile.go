// Package switchprofile holds the commodity Ethernet switches seed 002
// measured, as pure data: Table 2's power (a base and each active port by
// speed) and Table 6's overheads of turning a link on or off and changing
// its speed; and the price of a fabric's switches as one of them.
package switchprofile

import (
	"fmt"
	"math"
	"time"
)

// Speed is a commodity GbE port's link speed (seed 002 §3.6: multispeed
// link regulation sets 1 Gb/s, 100 Mb/s or 10 Mb/s).
type Speed int

// Port speeds, in Mb/s.
const (
	Off      Speed = 0
	Speed10M Speed = 10
	Speed100 Speed = 100
	Speed1G  Speed = 1000
)

func (s Speed) String() string {
	switch s {
	case Off:
		return "off"
	case Speed1G:
		return "1G"
	}
	return fmt.Sprintf("%dM", int(s))
}

// SwitchProfile is one commodity switch measured in seed 002: Table 2's
// power ("All except ports" and per-port watts by speed, "Max" with every
// port at 1 Gb/s) and Table 6's overheads of turning a link on or off and
// changing its speed — the time the link stays down ("the minimum
// overhead"). Link on/off runs price a switch per phase with Watts and
// hold a link's carrier down for the Table 6 time after a change.
type SwitchProfile struct {
	Name  string // as the paper's tables name it
	Model string // the product
	Ports int    // PC5324 "24-port", PC6248 "48 ports" [P]; PC6224, SF-0420G 24 [A]
	BaseW float64
	// PortW is one active port's power by speed.
	PortW map[Speed]float64
	// MaxW is Table 2's measured "Max": every port at 1 Gb/s.
	MaxW float64
	// OffNeedsBothEnds: "In the case of the SF-0420G, the power of the
	// port is reduced when the opposite port of the link is also
	// shutdown".
	OffNeedsBothEnds bool
	// OnOff is Table 6's on/off overhead; SpeedChange its speed changes,
	// keyed by {from, to}.
	OnOff       time.Duration
	SpeedChange map[[2]Speed]time.Duration
}

// Watts is the switch with ports active at the given speeds (Off and
// missing ports draw nothing: "the port-shutdown operation completely
// reduces the power of the port"). Table 2's model: base + Σ per-port.
func (p SwitchProfile) Watts(ports ...Speed) (float64, error) {
	if len(ports) > p.Ports {
		return 0, fmt.Errorf("%s has %d ports, not %d", p.Name, p.Ports, len(ports))
	}
	w := p.BaseW
	for i, s := range ports {
		if s == Off {
			continue
		}
		pw, ok := p.PortW[s]
		if !ok {
			return 0, fmt.Errorf("%s port %d: no power for speed %v (want 1G, 100M, 10M or off)", p.Name, i+1, s)
		}
		w += pw
	}
	return w, nil
}

// ModelMaxW is base + ports × the 1 Gb/s per-port power, which Table 2's
// measured Max should match (within 2.5 %: PC5324 43.8 vs 42.9).
func (p SwitchProfile) ModelMaxW() float64 { return p.BaseW + float64(p.Ports)*p.PortW[Speed1G] }

// PortRatio is Table 2's "(port ratio)": the share of Max the ports draw.
func (p SwitchProfile) PortRatio() float64 { return (p.MaxW - p.BaseW) / p.MaxW }

// seconds converts the tables' tenths of a second exactly.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s*1000)) * time.Millisecond }

// speedTimes are Table 6's columns Gb→100M, Gb←100M, 100M→10M, 100M←10M,
// Gb→10M, Gb←10M.
func speedTimes(t ...float64) map[[2]Speed]time.Duration {
	keys := [][2]Speed{{Speed1G, Speed100}, {Speed100, Speed1G}, {Speed100, Speed10M}, {Speed10M, Speed100}, {Speed1G, Speed10M}, {Speed10M, Speed1G}}
	m := map[[2]Speed]time.Duration{}
	for i, k := range keys {
		m[k] = seconds(t[i])
	}
	return m
}

// SwitchProfiles are seed 002's four switches (Table 2 and Table 6).
var SwitchProfiles = []SwitchProfile{
	{Name: "PC5324", Model: "Dell PowerConnect 5324", Ports: 24, BaseW: 15.0, MaxW: 42.9,
		PortW: map[Speed]float64{Speed1G: 1.2, Speed100: 0.9, Speed10M: 0.5},
		OnOff: seconds(3.2), SpeedChange: speedTimes(4.1, 2.4, 2.3, 3.3, 2.5, 2.4)},
	{Name: "PC6224", Model: "Dell PowerConnect 6224", Ports: 24, BaseW: 42.5, MaxW: 91.1,
		PortW: map[Speed]float64{Speed1G: 2.0, Speed100: 0.9, Speed10M: 0.8},
		OnOff: seconds(2.6), SpeedChange: speedTimes(2.8, 5.7, 2.6, 2.6, 2.6, 5.7)},
	{Name: "PC6248", Model: "Dell PowerConnect 6248", Ports: 48, BaseW: 56.8, MaxW: 155.2,
		PortW: map[Speed]float64{Speed1G: 2.1, Speed100: 1.3, Speed10M: 1.1},
		OnOff: seconds(2.2), SpeedChange: speedTimes(2.7, 3.3, 2.8, 3.1, 2.5, 2.3)},
	{Name: "SF-420", Model: "Planex Communications SF-0420G", Ports: 24, BaseW: 32.6, MaxW: 55.4,
		PortW:            map[Speed]float64{Speed1G: 1.0, Speed100: 0.2, Speed10M: 0.0},
		OffNeedsBothEnds: true,
		OnOff:            seconds(1.2), SpeedChange: speedTimes(2.7, 2.5, 2.4, 2.3, 2.8, 2.3)},
}

// SpeedOf is the GbE speed a lab's link rate stands for: the rate it was
// built with is 1 Gb/s, a tenth of it 100 Mb/s, a hundredth 10 Mb/s (seed
// 002's 1000:100:10, scaled to the lab). ok is false for any other rate.
func SpeedOf(rateBps, builtBps uint64) (s Speed, ok bool) {
	switch {
	case rateBps == 0:
		return Off, true
	case rateBps == builtBps:
		return Speed1G, true
	case rateBps*10 == builtBps:
		return Speed100, true
	case rateBps*100 == builtBps:
		return Speed10M, true
	}
	return Off, false
}

// SpeedChangeTime is Table 6's overhead of changing a port from one speed
// to another.
func (p SwitchProfile) SpeedChangeTime(from, to Speed) (time.Duration, error) {
	if d, ok := p.SpeedChange[[2]Speed{from, to}]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("%s: Table 6 has no time for %v to %v (speeds 1G, 100M, 10M: the lab's rate, a tenth, a hundredth)", p.Name, from, to)
}

// SpeedChangeHold is Table 6's time for a link of a lab built at builtBps
// going from one rate to another (SpeedOf); 0 when both stand for the
// same speed.
func (p SwitchProfile) SpeedChangeHold(fromBps, toBps, builtBps uint64) (time.Duration, error) {
	from, ok := SpeedOf(fromBps, builtBps)
	to, ok2 := SpeedOf(toBps, builtBps)
	if !ok || !ok2 || from == Off || to == Off {
		return 0, fmt.Errorf("%s's Table 6 times are for 1G, 100M and 10M: the built rate %d bit/s, a tenth and a hundredth of it (%d to %d bit/s is neither)",
			p.Name, builtBps, fromBps, toBps)
	}
	if from == to {
		return 0, nil
	}
	return p.SpeedChangeTime(from, to)
}

// Profile finds a switch profile by its table name or model; "SF-420G"
// (Table 6's name) finds the SF-420.
func Profile(name string) (SwitchProfile, error) {
	if name == "SF-420G" || name == "SF-0420G" {
		name = "SF-420"
	}
	for _, p := range SwitchProfiles {
		if p.Name == name || p.Model == name {
			return p, nil
		}
	}
	return SwitchProfile{}, fmt.Errorf("unknown switch profile %q (want PC5324, PC6224, PC6248 or SF-420)", name)
}

// LabPower is seed 002's power of a fabric's switches as one profile:
// each switch the profile's base plus its active ports at their speeds
// (Table 2's model, "the port-shutdown operation completely reduces the
// power of the port"; the lab's built rate stands for 1 Gb/s, SpeedOf),
// against every port on at 1 Gb/s.
type LabPower struct {
	Profile  string        `json:"profile"`
	Switches []SwitchWatts `json:"switches"`
	Watts    float64       `json:"watts"`
	AllOnW   float64       `json:"all_on_watts"`
	// Saving is 1 - Watts/AllOnW.
	Saving float64 `json:"saving"`
}

// SwitchWatts is one switch of a LabPower.
type SwitchWatts struct {
	Switch string `json:"switch"`
	Active int    `json:"active_ports"`
	Ports  int    `json:"ports"`
	// Slowed counts the active ports below 1 Gb/s.
	Slowed int     `json:"slowed_ports,omitempty"`
	Watts  float64 `json:"watts"`
}

// PriceSwitches prices switches (names in order, each with its ports'
// speeds) as profile p.
func PriceSwitches(p SwitchProfile, names []string, speeds map[string][]Speed) (*LabPower, error) {
	r := &LabPower{Profile: p.Name}
	for _, n := range names {
		ports := speeds[n]
		w, err := p.Watts(ports...)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", n, err)
		}
		all := make([]Speed, len(ports))
		sw := SwitchWatts{Switch: n, Ports: len(ports), Watts: w}
		for i, sp := range ports {
			all[i] = Speed1G
			if sp != Off {
				sw.Active++
			}
			if sp != Off && sp != Speed1G {
				sw.Slowed++
			}
		}
		full, err := p.Watts(all...)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", n, err)
		}
		r.Switches = append(r.Switches, sw)
		r.Watts += w
		r.AllOnW += full
	}
	if r.AllOnW > 0 {
		r.Saving = 1 - r.Watts/r.AllOnW
	}
	return r, nil
}
