// Package eks is the local AWS endpoint's EKS control plane: DescribeCluster on
// EKS's restJson1 wire protocol (GET /clusters/{name}), for an unmodified
// aws-sdk-go-v2 EKS client to discover the cluster endpoint, CA, service CIDR
// and Kubernetes version as Karpenter does.
//
// Modelled:
//   - DescribeCluster: cluster{name, arn, createdAt, version, endpoint,
//     certificateAuthority.data (base64 of the PEM), status, platformVersion,
//     roleArn, tags, kubernetesNetworkConfig{serviceIpv4Cidr, serviceIpv6Cidr,
//     ipFamily}}; an unknown cluster is ResourceNotFoundException (HTTP 404,
//     with clusterName).
//   - Go API: PutCluster (defaults: version 1.36, status ACTIVE, ipFamily ipv4,
//     serviceIpv4Cidr 10.100.0.0/16, platformVersion eks.1), UpdateCluster,
//     DeleteCluster, Clusters.
//   - Requests must be SigV4-signed for service "eks" in the configured region
//     (MissingAuthenticationTokenException / IncompleteSignatureException /
//     InvalidSignatureException, HTTP 403); any other route is
//     UnknownOperationException (HTTP 404).
//
// Not modelled: every other EKS operation (ListClusters, node groups, add-ons,
// access entries, ...), resourcesVpcConfig, logging, identity/OIDC, access
// config, cluster lifecycle (status never changes by itself), EKS's real
// request quotas and signature verification. SetThrottle refuses a fraction
// of the requests with ThrottlingException (HTTP 429) right after
// authentication.
package eks
