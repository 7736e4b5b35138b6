// Package st builds nodes and pods for scheduler tests ("scheduler
// testing"), in the manner of upstream's wrappers:
// st.Pod("p").Req("1", "1Gi").Label("app", "web").Obj(); and runs one
// plugin's extension points over a snapshot (Framework, Filter, Score).
// It is for tests only.
package st
