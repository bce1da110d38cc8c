// Package demo tells Dovetail's story on a local control plane, for a new
// user to watch in the terminal in about two minutes: three workloads of
// different shapes arrive on an empty cluster, Dovetail launches the
// cheapest nodes that fit them (showing type, zone, capacity type and $/h),
// every pod runs, then a node is deleted and drained without breaking its
// PodDisruptionBudget, then the load drops and consolidation removes and
// replaces nodes until the cluster is cheaper (again without breaking the
// PodDisruptionBudget), and a summary closes. The demo checks what it
// shows: if a step does not happen, it fails with an error.
//
// On CloudAWS (the default) the nodes are EC2 instances of a local AWS
// endpoint (internal/localaws) that boot as kwok Nodes: the story opens by
// applying the v1 EC2NodeClass and NodePool and showing what the
// EC2NodeClass resolved, the node tables show each node's instance and AMI
// IDs, launches and terminations are narrated as they happen, and the story
// closes by deleting the NodePool and checking that no instance is left
// running. On CloudKwok the nodes are simulated nodes of a KWOKNodeClass.
// Both clouds share one code path; ec2Story holds the AWS-only pieces.
package demo
