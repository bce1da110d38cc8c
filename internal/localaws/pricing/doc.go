// Package pricing is the local AWS endpoint's Price List Query API:
// GetProducts on its awsJson1_1 wire protocol (X-Amz-Target
// AWSPriceListService.GetProducts), answering the AmazonEC2 on-demand queries
// Karpenter makes with prices from internal/catalog, for an unmodified
// aws-sdk-go-v2 pricing client.
//
// Modelled:
//   - GetProducts for ServiceCode AmazonEC2, FormatVersion aws_v1: PriceList
//     holds one JSON document per product in AWS's shape
//     ({"product":{"productFamily","attributes":{...},"sku"},"serviceCode",
//     "terms":{"OnDemand":{"<sku>.JRTCKXETXF":{"priceDimensions":
//     {"<sku>.JRTCKXETXF.6YS6EN2CT7":{"unit":"Hrs","pricePerUnit":{"USD":..}}}}}},
//     "version","publicationDate"}).
//   - One Linux, no-preinstalled-software, on-demand product per instance type
//     and region, under each capacitystatus (Used, UnusedCapacityReservation,
//     AllocatedCapacityReservation) at the same rate; virtualized types under
//     tenancy Shared / productFamily "Compute Instance", bare-metal types
//     under tenancy Dedicated / "Compute Instance (bare metal)". Attributes:
//     servicecode, servicename, regionCode, location, locationType,
//     instanceType, tenancy, operatingSystem, preInstalledSw, licenseModel,
//     capacitystatus, marketoption, operation, usagetype,
//     processorArchitecture, vcpu, memory.
//   - Filters TERM_MATCH/EQUALS (exact), CONTAINS, ANY_OF, NONE_OF on those
//     attributes (field names case-insensitive), productFamily and sku;
//     MaxResults 1-100 (default 100) and NextToken pagination; errors
//     ValidationException, NotFoundException (other service codes),
//     InvalidParameterException (FormatVersion), InvalidNextTokenException.
//   - Requests must be SigV4-signed for service "pricing" in the configured
//     region (us-east-1 by default): MissingAuthenticationTokenException,
//     IncompleteSignatureException, InvalidSignatureException (HTTP 403);
//     other operations are UnknownOperationException.
//   - Go API: SetPrice, DeletePrice, Price change the price list at run time.
//
// Not modelled: other services, operating systems, tenancies of virtualized
// types, Reserved and spot terms, non-USD currencies (the China partition's
// CNY), DescribeServices/GetAttributeValues/price list files,
// ExpiredNextTokenException, the API's real request quotas and signature
// verification. The catalog has us-east-1 prices only; other PriceRegions
// reuse them. SetThrottle refuses a fraction of the requests with
// ThrottlingException (HTTP 429, as the model declares it) right after
// authentication.
package pricing
