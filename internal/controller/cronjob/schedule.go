package cronjob

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed cron schedule.
type Schedule interface {
	// Next is the first activation strictly after t, in t's location; the
	// zero time if there is none within five years.
	Next(t time.Time) time.Time
}

// ParseSchedule parses spec as upstream does (github.com/robfig/cron/v3's
// standard parser): five fields — minute, hour, day of month, month (1-12
// or jan-dec), day of week (0-6 or sun-sat) — each a comma-separated list
// of *, ?, N, N-M, with an optional /step; or a descriptor: @yearly
// (@annually), @monthly, @weekly, @daily (@midnight), @hourly, or
// "@every <duration>". A "TZ=<zone> " or "CRON_TZ=<zone> " prefix sets the
// time zone; without one the schedule runs in the location of the time
// given to Next. Errors have the library's texts.
//
// As in cron, when both day fields are restricted (neither starts with *
// or ?) a day matches if either does.
func ParseSchedule(spec string) (Schedule, error) {
	if len(spec) == 0 {
		return nil, fmt.Errorf("empty spec string")
	}
	loc := time.Local
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		eq := strings.Index(spec, "=")
		end := strings.Index(spec, " ")
		if end < 0 {
			end = len(spec)
		}
		name := spec[eq+1 : end]
		var err error
		if loc, err = time.LoadLocation(name); err != nil {
			return nil, fmt.Errorf("provided bad location %s: %v", name, err)
		}
		spec = strings.TrimSpace(spec[end:])
	}
	if strings.HasPrefix(spec, "@") {
		return parseDescriptor(spec, loc)
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly %d fields, found %d: %s", 5, len(fields), fields)
	}
	s := &specSchedule{second: 1 << 0, loc: loc}
	for i, dst := range []*uint64{&s.minute, &s.hour, &s.dom, &s.month, &s.dow} {
		bits, err := parseField(fields[i], fieldBounds[i])
		if err != nil {
			return nil, err
		}
		*dst = bits
	}
	return s, nil
}

// starBit marks a field given as * or ?: with the other day field it
// makes day matching an AND rather than an OR.
const starBit = 1 << 63

type bounds struct {
	min, max uint
	names    map[string]uint
}

var (
	minutes = bounds{0, 59, nil}
	hours   = bounds{0, 23, nil}
	dom     = bounds{1, 31, nil}
	months  = bounds{1, 12, map[string]uint{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	dow = bounds{0, 6, map[string]uint{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
	fieldBounds = [5]bounds{minutes, hours, dom, months, dow}
)

func parseField(field string, b bounds) (uint64, error) {
	var bits uint64
	for _, expr := range strings.Split(field, ",") {
		r, err := parseRange(expr, b)
		if err != nil {
			return 0, err
		}
		bits |= r
	}
	return bits, nil
}

// parseRange reads "*", "?", "N", "N-M", each with an optional "/step"
// ("N/step" runs from N to the maximum).
func parseRange(expr string, b bounds) (uint64, error) {
	rangeAndStep := strings.Split(expr, "/")
	lowAndHigh := strings.Split(rangeAndStep[0], "-")
	single := len(lowAndHigh) == 1
	var start, end, step uint
	var extra uint64
	var err error
	if lowAndHigh[0] == "*" || lowAndHigh[0] == "?" {
		start, end, extra = b.min, b.max, starBit
	} else {
		if start, err = parseIntOrName(lowAndHigh[0], b.names); err != nil {
			return 0, err
		}
		switch len(lowAndHigh) {
		case 1:
			end = start
		case 2:
			if end, err = parseIntOrName(lowAndHigh[1], b.names); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("too many hyphens: %s", expr)
		}
	}
	switch len(rangeAndStep) {
	case 1:
		step = 1
	case 2:
		if step, err = parseUint(rangeAndStep[1]); err != nil {
			return 0, err
		}
		if single {
			end = b.max
		}
		if step > 1 {
			extra = 0
		}
	default:
		return 0, fmt.Errorf("too many slashes: %s", expr)
	}
	switch {
	case start < b.min:
		return 0, fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, b.min, expr)
	case end > b.max:
		return 0, fmt.Errorf("end of range (%d) above maximum (%d): %s", end, b.max, expr)
	case start > end:
		return 0, fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	case step == 0:
		return 0, fmt.Errorf("step of range should be a positive number: %s", expr)
	}
	return bitRange(start, end, step) | extra, nil
}

func parseIntOrName(s string, names map[string]uint) (uint, error) {
	if names != nil {
		if v, ok := names[strings.ToLower(s)]; ok {
			return v, nil
		}
	}
	return parseUint(s)
}

func parseUint(s string) (uint, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s: %s", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number (%d) not allowed: %s", n, s)
	}
	return uint(n), nil
}

// bitRange sets the bits min, min+step, … up to max.
func bitRange(min, max, step uint) uint64 {
	if step == 1 {
		return ^(math.MaxUint64 << (max + 1)) & (math.MaxUint64 << min)
	}
	var bits uint64
	for i := min; i <= max; i += step {
		bits |= 1 << i
	}
	return bits
}

// all is every value of b, as "*".
func all(b bounds) uint64 { return bitRange(b.min, b.max, 1) | starBit }

func parseDescriptor(spec string, loc *time.Location) (Schedule, error) {
	s := &specSchedule{second: 1 << 0, minute: 1 << 0, hour: 1 << 0, dom: all(dom), month: all(months), dow: all(dow), loc: loc}
	switch spec {
	case "@yearly", "@annually":
		s.dom, s.month = 1<<1, 1<<1
	case "@monthly":
		s.dom = 1 << 1
	case "@weekly":
		s.dow = 1 << 0
	case "@daily", "@midnight":
	case "@hourly":
		s.hour = all(hours)
	default:
		const every = "@every "
		if !strings.HasPrefix(spec, every) {
			return nil, fmt.Errorf("unrecognized descriptor: %s", spec)
		}
		d, err := time.ParseDuration(spec[len(every):])
		if err != nil {
			return nil, fmt.Errorf("failed to parse duration %s: %s", spec, err)
		}
		if d < time.Second {
			d = time.Second
		}
		return everySchedule{delay: d - d%time.Second}, nil
	}
	return s, nil
}

// everySchedule fires every delay (whole seconds), counted from the time
// given to Next rounded down to the second.
type everySchedule struct{ delay time.Duration }

func (e everySchedule) Next(t time.Time) time.Time {
	return t.Add(e.delay - time.Duration(t.Nanosecond()))
}

// specSchedule is a set of allowed values per field, as bit sets.
type specSchedule struct {
	second, minute, hour, dom, month, dow uint64
	loc                                   *time.Location
}

// Next searches forward field by field, from the month down, as the
// cron library does — including its handling of days that skip or repeat
// an hour at a daylight-saving change.
func (s *specSchedule) Next(t time.Time) time.Time {
	origLoc := t.Location()
	loc := s.loc
	if loc == time.Local {
		loc = t.Location()
	}
	if s.loc != time.Local {
		t = t.In(s.loc)
	}
	// The earliest possible time: the next whole second.
	t = t.Add(time.Second - time.Duration(t.Nanosecond()))
	added := false
	yearLimit := t.Year() + 5

wrap:
	if t.Year() > yearLimit {
		return time.Time{}
	}
	for 1<<uint(t.Month())&s.month == 0 {
		if !added {
			added = true
			t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 1, 0)
		if t.Month() == time.January {
			goto wrap
		}
	}
	for !s.dayMatches(t) {
		if !added {
			added = true
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 0, 1)
		// Midnight may have moved by an hour across a DST change.
		if t.Hour() != 0 {
			if t.Hour() > 12 {
				t = t.Add(time.Duration(24-t.Hour()) * time.Hour)
			} else {
				t = t.Add(time.Duration(-t.Hour()) * time.Hour)
			}
		}
		if t.Day() == 1 {
			goto wrap
		}
	}
	for 1<<uint(t.Hour())&s.hour == 0 {
		if !added {
			added = true
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
		}
		t = t.Add(time.Hour)
		if t.Hour() == 0 {
			goto wrap
		}
	}
	for 1<<uint(t.Minute())&s.minute == 0 {
		if !added {
			added = true
			t = t.Truncate(time.Minute)
		}
		t = t.Add(time.Minute)
		if t.Minute() == 0 {
			goto wrap
		}
	}
	for 1<<uint(t.Second())&s.second == 0 {
		if !added {
			added = true
			t = t.Truncate(time.Second)
		}
		t = t.Add(time.Second)
		if t.Second() == 0 {
			goto wrap
		}
	}
	return t.In(origLoc)
}

func (s *specSchedule) dayMatches(t time.Time) bool {
	domMatch := 1<<uint(t.Day())&s.dom > 0
	dowMatch := 1<<uint(t.Weekday())&s.dow > 0
	if s.dom&starBit > 0 || s.dow&starBit > 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}
