import AASA
import Hashing
import Served

extension ConfigLoader {
    /// Reads every page the site's settings name (`page:` and the routes' `page:`, at most
    /// `SiteSettings.maximumPages`) into `site.pages`. A page is served whatever it holds, so each
    /// must be a file of the site directory itself: not a symlink out of it (to a key, another
    /// site's files, /proc), with one name only (a hard link to another site's key is inside by
    /// every path), a regular file (never a FIFO or device, looked at unopened), at most
    /// `LandingPage.maximumFileSize` bytes (never read past one byte more), checked on the opened
    /// descriptor (`openChecked`), so that a name swapped after the check serves nothing new.
    /// What is read is served from memory until the next read: a page deleted or replaced later
    /// is noticed by the reload its change raises, never by a request.
    ///
    /// Each problem names the file and what takes the page (`SiteSettings.takers`), so that a
    /// route's bad page can be found from the error alone.
    static func readPages(_ directory: String, _ relative: String, _ site: inout SiteSource, _ rules: FileRules) {
        var pageRules = rules
        pageRules.within = directory
        pageRules.singleName = true
        let settings = site.settings
        var total = 0
        var held: [String] = []
        for name in settings.pageNames.prefix(SiteSettings.maximumPages) {
            let taken = settings.takers(of: name)
            site.pageUses[name] = PageUse(
                takenBy: taken, routes: settings.links.routes.indices.filter { settings.links.routes[$0].page == name })
            let before = site.problems.count
            if let file = readSiteFile(directory, relative, name, LandingPage.maximumFileSize, &site, pageRules) {
                // The site's pages together stay within their budget: one past it is not held.
                guard total + file.bytes.count <= SiteSettings.maximumPageBytes else {
                    let names = (held + [name]).map { TerminalText.escaped($0) }.joined(separator: ", ")
                    site.problems.append(
                        ConfigProblem(
                            severity: .error, file: "\(relative)/\(name)",
                            message:
                                "the site's pages would hold \(total + file.bytes.count) bytes together (\(names)), past the "
                                + "\(SiteSettings.maximumPageBytes / 1024) KB a site's pages may hold; it is not served (it is \(taken))"))
                    // As a file refused as it is: a version already served stays, a new page is not.
                    site.unreadable.insert(name)
                    continue
                }
                total += file.bytes.count
                held.append(name)
                site.pages[name] = SiteFile(
                    relativePath: file.path, bytes: file.bytes, modified: file.modified,
                    result: LandingPage.validate(file.bytes, name: name),
                    // Hashed here, on every core, as the association files are (`siteFile`), not
                    // on the registry's one thread; the heads wait for the settings' options.
                    sha256: Digest.sha256(file.bytes))
            } else if !site.unreadable.contains(name) {
                site.problems.append(
                    ConfigProblem(severity: .error, file: "\(relative)/\(name)", message: "missing: site.yaml names it as \(taken)"))
                continue
            }
            // A refusal by the file rules (a link into tls/, a hard link, a FIFO): say what it is for.
            for i in before..<site.problems.count { site.problems[i].message += " (it is \(taken))" }
        }
    }
}
