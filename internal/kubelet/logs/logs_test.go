package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeAttempt(t *testing.T, dir string, n int, lines ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, itoa(n)+".log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	writeAttempt(t, dir, 0, "2026-11-29T10:00:00.000000001Z stdout F old")
	writeAttempt(t, dir, 1,
		"2026-11-29T10:00:01Z stdout F one",
		"2026-11-29T10:00:02Z stderr P tw",
		"2026-11-29T10:00:02Z stderr F o",
		"2026-11-29T10:00:03Z stdout F three",
	)
	ten := int64(1)
	since := time.Date(2026, 11, 29, 10, 0, 2, 0, time.UTC)
	limit := int64(5)
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"all", Options{}, "one\ntwo\nthree\n"},
		{"previous", Options{Previous: true}, "old\n"},
		{"tail", Options{TailLines: &ten}, "three\n"},
		{"since", Options{Since: &since}, "two\nthree\n"},
		{"limit", Options{LimitBytes: &limit}, "one\nt"},
		{"timestamps", Options{TailLines: &ten, Timestamps: true}, "2026-11-29T10:00:03Z three\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := Write(context.Background(), &b, dir, c.o); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, b.String(), c.want)
		}
	}
	if err := Write(context.Background(), &bytes.Buffer{}, t.TempDir(), Options{Previous: true}); err == nil {
		t.Error("previous without attempts: no error")
	}
}

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	writeAttempt(t, dir, 0, "2026-11-29T10:00:01Z stdout F first")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := ioPipe()
	done := make(chan error, 1)
	go func() { done <- Write(ctx, pw, dir, Options{Follow: true, PollInterval: 10 * time.Millisecond}) }()
	f, _ := os.OpenFile(filepath.Join(dir, "0.log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("2026-11-29T10:00:02Z stdout F second\n")
	f.Close()
	got := readUntil(t, pr, "second\n")
	cancel()
	<-done
	if got != "first\nsecond\n" {
		t.Fatalf("followed %q", got)
	}
}
