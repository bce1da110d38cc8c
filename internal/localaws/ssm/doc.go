// Package ssm is the local AWS endpoint's Systems Manager Parameter Store:
// enough of SSM, on its awsJson1_1 wire protocol (X-Amz-Target
// AmazonSSM.<Operation>), for an unmodified aws-sdk-go-v2 SSM client to
// resolve AMI aliases as Karpenter does.
//
// Modelled:
//   - GetParameter: Name as a name, an ARN, or either with a ":<version>"
//     selector; answers Parameter{ARN, DataType, LastModifiedDate, Name,
//     Selector, Type "String", Value, Version}; ParameterNotFound,
//     ParameterVersionNotFound, ValidationException (missing or over-long Name).
//   - GetParameters: 1-10 Names; unknown ones come back in InvalidParameters.
//   - PutParameter (Go API only): every call writes a new version (as
//     PutParameter with Overwrite does); SSM's 100-version history limit, oldest
//     dropped. DataType is "aws:ec2:image" for AMI-ID values, else "text".
//   - Public parameters (/aws/service/...) have ARNs without an account, as
//     AWS's do.
//   - Requests must be SigV4-signed for service "ssm" in the configured region:
//     MissingAuthenticationTokenException, IncompleteSignatureException or
//     InvalidSignatureException (HTTP 403) otherwise; any other operation is
//     UnknownOperationException; a malformed body is SerializationException.
//
// Not modelled: the PutParameter/DeleteParameter/GetParametersByPath/
// DescribeParameters wire operations, SecureString and StringList types,
// decryption (WithDecryption is accepted and ignored), parameter labels (a
// non-numeric selector is ParameterVersionNotFound), policies, tiers, tags,
// and signature verification. SetThrottle refuses a fraction of the requests
// with ThrottlingException (HTTP 400) right after authentication; SSM's real
// limits (per-operation request rates) are not modelled.
package ssm
