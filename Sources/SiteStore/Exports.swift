// What SiteStore builds is the served model (`Snapshot`, `ServedSite`, `HostName`,
// `CertificateFiles`…): a module that loads sites reads those terms too, so importing SiteStore
// brings them.
@_exported public import Served
