// Package userdata renders the EC2 user data that makes a new instance join
// the cluster as the node of a NodeClaim, in the format of its AMI family:
// a MIME multipart document with a nodeadm NodeConfig (AL2023), a MIME
// multipart document with an /etc/eks/bootstrap.sh call (AL2), a TOML
// settings document (Bottlerocket), a PowerShell script (Windows), or the
// user's own data untouched (Custom).
//
// The output reproduces what Karpenter v1.14 writes into a launch template,
// so nodes booted from Dovetail's launch templates behave exactly like nodes
// launched by Karpenter: the same labels and taints are registered by the
// kubelet, the same max-pods value is used, and the user's spec.userData is
// merged the same way. Where Karpenter's output depends on Go map order,
// this package sorts, so the rendered bytes (and so the launch template
// hash) are deterministic.
//
// The package is pure: it takes everything it needs in Options (the caller
// resolves the cluster endpoint, CA bundle, DNS IP, service CIDR and max
// pods) and never talks to AWS or Kubernetes. Validate checks a class's
// spec.userData on its own, for the EC2NodeClass controller's
// ValidationSucceeded condition.
package userdata
