// Package bootstrap reads EC2 user data the way a booting node does, for
// the local AWS endpoint that plays instances: it finds the cluster, the
// labels, the taints, the max-pods value and the DNS IPs that the node's
// own bootstrap (nodeadm on AL2023, /etc/eks/bootstrap.sh on AL2, the
// Bottlerocket settings API, Start-EKSBootstrap.ps1 on Windows) would hand
// to the kubelet, so the fake node registers with exactly those.
//
// It is written independently of the renderer in
// internal/cloudprovider/aws/userdata and must not import it: the two are
// separate readings of the same formats, and tests render with one and
// parse with the other so that a mistake in either shows up. User data
// that a real node could not boot from is an error here, so a wrong
// bootstrap shows up as a missing Node rather than a silently correct one.
package bootstrap
