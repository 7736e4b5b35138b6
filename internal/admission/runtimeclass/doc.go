// Package runtimeclass is upstream's RuntimeClass admission plugin. A pod
// created with spec.runtimeClassName must name an existing RuntimeClass;
// it gets the class's overhead (and is refused if it sets another one)
// and the class's scheduling node selector and tolerations merged into
// its own (refused if its node selector gives a key another value). A
// pod with an overhead but no class overhead is refused too. The class is
// read from the API server's storage on every such create.
package runtimeclass
