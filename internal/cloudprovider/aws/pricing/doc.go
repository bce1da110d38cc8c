// Package pricing gives the AWS provider the hourly price of every offering:
// on-demand prices from the AWS Price List API (GetProducts) and spot prices
// from EC2's DescribeSpotPriceHistory, refreshed every RefreshInterval (12
// hours, as Karpenter does).
//
// Why a provider of its own: prices change rarely and the Price List API is
// slow and paginated, so prices are fetched in the background by Refresh, which
// the composition calls from a loop, and read from memory when instance types
// are built.
//
// Until the first successful refresh, after failed ones, for types the APIs do
// not price, and always in an isolated VPC (Options.IsolatedVPC, Karpenter's
// ISOLATED_VPC) or a us-gov region, where the Price List API is not called,
// prices come from the embedded catalog (internal/catalog): its static
// on-demand table and the spot prices it derives from it (catalog.SpotPrice),
// so that the provider agrees with the catalog and with the local AWS
// endpoint. Price-list entries that cannot be parsed are skipped and counted
// (Status), never fatal.
package pricing
