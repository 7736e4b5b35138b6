// Package all lists every built-in resource plainkube serves, with its
// server-side table attached.
package all
