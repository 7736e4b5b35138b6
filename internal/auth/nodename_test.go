package auth

import (
	"testing"
)

func TestNodeName(t *testing.T) {
	for _, tc := range []struct {
		u    *User
		want string
	}{
		{&User{Name: "system:node:a", Groups: []string{GroupNodes}}, "a"},
		{&User{Name: "system:node:a"}, ""},
		{&User{Name: "bob", Groups: []string{GroupNodes}}, ""},
		{nil, ""},
	} {
		if got := NodeName(tc.u); got != tc.want {
			t.Errorf("NodeName(%+v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}
