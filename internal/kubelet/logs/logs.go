package logs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options select what to write, as the pods/log query parameters.
type Options struct {
	Follow     bool
	Previous   bool
	Timestamps bool
	// TailLines, when set, keeps only the last lines of the log.
	TailLines *int64
	// Since, when set, drops lines logged before it.
	Since *time.Time
	// LimitBytes, when set, stops after this many bytes.
	LimitBytes *int64
	// PollInterval is how often a followed log is checked for growth
	// (default 100 ms).
	PollInterval time.Duration
}

// Line is one parsed log line.
type Line struct {
	Time    time.Time
	Stream  string
	Partial bool
	Message []byte // without the trailing newline
}

// ParseLine parses one CRI log line (without its newline).
func ParseLine(b []byte) (Line, error) {
	parts := bytes.SplitN(b, []byte(" "), 4)
	if len(parts) < 3 {
		return Line{}, fmt.Errorf("logs: malformed CRI log line %q", b)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return Line{}, fmt.Errorf("logs: bad time in CRI log line: %w", err)
	}
	l := Line{Time: ts, Stream: string(parts[1]), Partial: string(parts[2]) == "P"}
	if len(parts) == 4 {
		l.Message = parts[3]
	}
	return l, nil
}

// ErrNoPrevious is returned for Previous when the container has not restarted.
var ErrNoPrevious = errors.New("previous terminated container not found")

// Attempts lists the log files of a container directory, oldest first.
func Attempts(containerDir string) ([]string, error) {
	entries, err := os.ReadDir(containerDir)
	if err != nil {
		return nil, err
	}
	type file struct {
		n    int
		path string
	}
	var files []file
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".log")
		if n, err := strconv.Atoi(name); err == nil && name != e.Name() {
			files = append(files, file{n, filepath.Join(containerDir, e.Name())})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].n < files[j].n })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out, nil
}

// Write writes the log of the container whose files are in containerDir to
// w. With Follow it keeps writing what is appended until ctx ends.
func Write(ctx context.Context, w io.Writer, containerDir string, o Options) error {
	files, err := Attempts(containerDir)
	if err != nil {
		return err
	}
	var path string
	switch {
	case o.Previous && len(files) < 2:
		return ErrNoPrevious
	case o.Previous:
		path = files[len(files)-2]
	case len(files) == 0:
		return fmt.Errorf("logs: no log file in %s", containerDir)
	default:
		path = files[len(files)-1]
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lw := &limitedWriter{w: w, left: -1}
	if o.LimitBytes != nil {
		lw.left = *o.LimitBytes
	}
	// Read what is there, keeping only the tail if asked.
	rd := bufio.NewReader(f)
	var lines []Line
	var pending []byte
	readLines := func(keep func(Line)) error {
		for {
			chunk, err := rd.ReadBytes('\n')
			pending = append(pending, chunk...)
			if err == io.EOF {
				return nil // an incomplete last line waits for more
			}
			if err != nil {
				return err
			}
			l, perr := ParseLine(bytes.TrimSuffix(pending, []byte("\n")))
			l.Message = bytes.Clone(l.Message) // pending is reused
			pending = pending[:0]
			if perr != nil {
				continue
			}
			if o.Since != nil && l.Time.Before(*o.Since) {
				continue
			}
			keep(l)
		}
	}
	if err := readLines(func(l Line) { lines = append(lines, l) }); err != nil {
		return err
	}
	if o.TailLines != nil {
		lines = tail(lines, int(*o.TailLines))
	}
	for _, l := range lines {
		if err := writeLine(lw, l, o.Timestamps); err != nil {
			return nilIfLimit(err)
		}
	}
	if !o.Follow {
		return nil
	}
	poll := o.PollInterval
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if f, ok := w.(interface{ Flush() }); ok {
			f.Flush()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var werr error
		if err := readLines(func(l Line) {
			if werr == nil {
				werr = writeLine(lw, l, o.Timestamps)
			}
		}); err != nil {
			return err
		}
		if werr != nil {
			return nilIfLimit(werr)
		}
	}
}

// tail keeps the last n complete lines (partial pieces belong to the line
// they end in).
func tail(lines []Line, n int) []Line {
	if n < 0 {
		return lines
	}
	full := 0
	for i := len(lines) - 1; i >= 0; i-- {
		if !lines[i].Partial {
			if full == n {
				return lines[i+1:]
			}
			full++
		}
	}
	return lines
}

func writeLine(w io.Writer, l Line, timestamps bool) error {
	var b []byte
	if timestamps {
		b = append(b, l.Time.UTC().Format(time.RFC3339Nano)...)
		b = append(b, ' ')
	}
	b = append(b, l.Message...)
	if !l.Partial {
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}

var errLimit = errors.New("limit reached")

func nilIfLimit(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

// limitedWriter writes at most left bytes (left < 0: no limit).
type limitedWriter struct {
	w    io.Writer
	left int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.left < 0 {
		return l.w.Write(p)
	}
	if l.left == 0 {
		return 0, errLimit
	}
	if int64(len(p)) > l.left {
		n, err := l.w.Write(p[:l.left])
		l.left = 0
		if err == nil {
			err = errLimit
		}
		return n, err
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}
