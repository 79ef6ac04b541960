package qos

import "fmt"

// Verdict is what the engine did with one datagram.
type Verdict uint8

// Verdicts. The Answered ones produced a response; the Dropped ones did not.
const (
	Answered             Verdict = iota // echoed with no flow control
	AnsweredBackoff                     // echoed with a voluntary back-off
	AnsweredProbe                       // a health probe, echoed with no flow control
	BannedRate                          // echoed with a ban: the source exceeded its rate
	BannedCapacity                      // echoed with a ban: the engine was over capacity
	DroppedBanned                       // the source is banned
	DroppedTitle                        // the title is not on the allow-list
	DroppedTooShort                     // malformed: shorter than a request
	DroppedTooLong                      // malformed: over 1500 bytes
	DroppedMagic                        // malformed: not 0x59
	DroppedVersion                      // malformed: version nibble not 0
	DroppedFlow                         // malformed: flow-control nibble not 0
	DroppedTitleLength                  // malformed: title length 0 or past the end
	DroppedTitleEncoding                // malformed: title not UTF-8
	NumVerdicts
)

var verdictNames = [NumVerdicts]string{
	"answered", "answered_backoff", "answered_probe", "banned_rate", "banned_capacity", "banned",
	"title_not_allowed", "too_short", "too_long", "magic", "version", "flow",
	"title_length", "title_encoding",
}

func (v Verdict) String() string {
	if v < NumVerdicts {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Answered reports whether the verdict produced a response.
func (v Verdict) Answered() bool { return v <= BannedCapacity }
