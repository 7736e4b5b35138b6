// Package atomicwriter keeps a directory's files as a set that changes
// all at once, as upstream's kubelet does for configMap, secret,
// downwardAPI and projected volumes.
//
// Layout of a target directory:
//
//	..2026_11_29_17_30_00.123456789/   the current version (a "timestamped dir")
//	..data -> ..2026_11_29_17_30_00.123456789
//	key    -> ..data/key               one symlink per top-level name
//
// Write puts a new version in a fresh timestamped directory, points a
// temporary symlink at it and renames that over ..data (rename is atomic),
// so a reader that opens key sees either the old files or the new ones,
// never a mix. Then the user-visible names of the old version that the
// new one lacks are removed (names the writer did not make stay, as
// upstream), and the old version is deleted. Writing a payload equal to
// the current one (same paths, data and modes) changes nothing.
package atomicwriter
