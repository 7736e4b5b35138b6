package batch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule parsing for CronJob validation. Upstream validates
// spec.schedule with the "standard" parser of github.com/robfig/cron/v3:
// five fields (minute hour day-of-month month day-of-week), or a
// descriptor (@hourly, @every 1h30m, …), optionally preceded by TZ= or
// CRON_TZ=. This is a small parser with the same grammar and the same
// error texts, since users see them in `kubectl` output.

// cronField is the allowed range of one schedule field and its names.
type cronField struct {
	min, max int
	names    map[string]int
}

var cronFields = [5]cronField{
	{min: 0, max: 59}, // minute
	{min: 0, max: 23}, // hour
	{min: 1, max: 31}, // day of month
	{min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}},
	{min: 0, max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}},
}

var cronDescriptors = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

// parseCronSchedule returns nil if spec is a schedule upstream accepts, or
// an error with the text upstream's parser would give.
func parseCronSchedule(spec string) error {
	if len(spec) == 0 {
		return fmt.Errorf("empty spec string")
	}
	// An optional time zone prefix: TZ=Europe/Paris or CRON_TZ=…
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		eq := strings.Index(spec, "=")
		end := strings.Index(spec, " ")
		if end < 0 {
			end = len(spec)
		}
		name := spec[eq+1 : end]
		if _, err := time.LoadLocation(name); err != nil {
			return fmt.Errorf("provided bad location %s: %v", name, err)
		}
		spec = strings.TrimSpace(spec[end:])
	}
	if strings.HasPrefix(spec, "@") {
		return parseCronDescriptor(spec)
	}
	fields := strings.Fields(spec)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("expected exactly %d fields, found %d: %s", len(cronFields), len(fields), fields)
	}
	for i, f := range fields {
		for _, expr := range strings.Split(f, ",") {
			if err := parseCronRange(expr, cronFields[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseCronDescriptor(spec string) error {
	if cronDescriptors[spec] {
		return nil
	}
	const every = "@every "
	if strings.HasPrefix(spec, every) {
		if _, err := time.ParseDuration(spec[len(every):]); err != nil {
			return fmt.Errorf("failed to parse duration %s: %s", spec, err)
		}
		return nil
	}
	return fmt.Errorf("unrecognized descriptor: %s", spec)
}

// parseCronRange checks one comma-separated part: "*", "?", "5", "1-5",
// "*/10", "10/5", "mon-fri" and the like.
func parseCronRange(expr string, r cronField) error {
	rangeAndStep := strings.Split(expr, "/")
	lowAndHigh := strings.Split(rangeAndStep[0], "-")
	single := len(lowAndHigh) == 1

	var start, end int
	var err error
	if lowAndHigh[0] == "*" || lowAndHigh[0] == "?" {
		start, end = r.min, r.max
	} else {
		if start, err = cronIntOrName(lowAndHigh[0], r.names); err != nil {
			return err
		}
		switch len(lowAndHigh) {
		case 1:
			end = start
		case 2:
			if end, err = cronIntOrName(lowAndHigh[1], r.names); err != nil {
				return err
			}
		default:
			return fmt.Errorf("too many hyphens: %s", expr)
		}
	}

	step := 1
	switch len(rangeAndStep) {
	case 1:
	case 2:
		if step, err = cronInt(rangeAndStep[1]); err != nil {
			return err
		}
		// "N/step" means "from N to the end, every step".
		if single {
			end = r.max
		}
	default:
		return fmt.Errorf("too many slashes: %s", expr)
	}

	switch {
	case start < r.min:
		return fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, r.min, expr)
	case end > r.max:
		return fmt.Errorf("end of range (%d) above maximum (%d): %s", end, r.max, expr)
	case start > end:
		return fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	case step == 0:
		return fmt.Errorf("step of range should be a positive number: %s", expr)
	}
	return nil
}

func cronIntOrName(s string, names map[string]int) (int, error) {
	if names != nil {
		if n, ok := names[strings.ToLower(s)]; ok {
			return n, nil
		}
	}
	return cronInt(s)
}

func cronInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s: %s", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number (%d) not allowed: %s", n, s)
	}
	return n, nil
}
