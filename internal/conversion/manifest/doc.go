// Package manifest is the offline converter behind `dovetail convert`: YAML
// bytes in, YAML bytes (or errors) out, no cluster needed. It reads a stream
// of documents and converts Karpenter's v1alpha5 Provisioner and Machine and
// v1alpha1 AWSNodeTemplate (as karpenter-convert did) and v1beta1 or v1
// NodePools, NodeClaims and EC2NodeClasses to v1 (or v1beta1). Documents of
// other kinds pass through unchanged.
//
// Every converted object is validated against the CRDs generated from the API
// types, defaults and CEL rules included, so the output is what the API server
// accepts; a document that cannot be converted gets an error naming its
// source, document index, line and field. The package holds no state between
// calls: Convert and ConvertAll are pure functions of their arguments.
package manifest
