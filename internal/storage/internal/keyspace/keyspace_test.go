package keyspace

import (
	"slices"
	"testing"
)

func TestMatchAndEnd(t *testing.T) {
	tests := []struct {
		prefix, key string
		match       bool
	}{
		{"/a/", "/a/x", true},
		{"/a/", "/a/x/y", true},
		{"/a/", "/ab/x", false},
		{"/a/", "/a", false},
		{"/a/x", "/a/x", true},
		{"/a/x", "/a/xy", false},
		{"/a/x", "/a/x/y", false},
		{"", "/anything", true},
	}
	for _, tt := range tests {
		if got := Match(tt.prefix, tt.key); got != tt.match {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.prefix, tt.key, got, tt.match)
		}
		inRange := tt.key >= Start(tt.prefix) && Before(tt.key, End(tt.prefix))
		if inRange != tt.match {
			t.Errorf("range of %q contains %q = %v, want %v", tt.prefix, tt.key, inRange, tt.match)
		}
	}
	if got := End("/a/"); got != "/a0" {
		t.Errorf("End(/a/) = %q", got)
	}
	if got := End("/a\xff/"); got != "/a\xff0" {
		t.Errorf("End = %q", got)
	}
	if got := End(""); got != "" {
		t.Errorf("End(\"\") = %q", got)
	}
}

func TestSorted(t *testing.T) {
	var s Sorted
	for _, k := range []string{"/c", "/a", "/b", "/a", "/d"} {
		s.Insert(k)
	}
	s.Delete("/d")
	s.Delete("/zz")
	if got, want := s.Range("", ""), []string{"/a", "/b", "/c"}; !slices.Equal(got, want) {
		t.Fatalf("Range = %v, want %v", got, want)
	}
	if got, want := s.Range("/b", "/c"), []string{"/b"}; !slices.Equal(got, want) {
		t.Fatalf("Range = %v, want %v", got, want)
	}
	if s.Len() != 3 {
		t.Fatalf("Len = %d", s.Len())
	}
}
