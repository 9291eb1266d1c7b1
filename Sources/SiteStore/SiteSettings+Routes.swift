import HTTPCore
import Served

extension SiteSettings {
    /// `routes:` (a table of mappings), checked row by row; problems name the row as
    /// `routes[i]`, counted from 0 as `/sites` and /metrics label it.
    static func parseRoutes(_ entry: YAMLEntry, problem: (String) -> Void) -> [RouteSettings] {
        let at = "routes" + (entry.line.map { " (line \($0))" } ?? "")
        guard case .table(let rows) = entry.value else {
            problem("\(at): must be a list of routes, each a mapping with a path, e.g. - path: /p/{id}")
            return []
        }
        guard rows.count <= RouteSettings.maximumCount else {
            problem("\(at): \(rows.count) routes; at most \(RouteSettings.maximumCount)")
            return []
        }
        var routes: [RouteSettings] = []
        var seen: [String: Int] = [:]
        for (index, row) in rows.enumerated() {
            let name = "routes[\(index)]"
            func rowProblem(_ key: String?, _ line: Int?, _ message: String) {
                problem(name + (key.map { ".\($0)" } ?? "") + (line.map { " (line \($0))" } ?? "") + ": " + message)
            }
            guard let pathEntry = row.first(where: { $0.path == "path" }) else {
                rowProblem(nil, row.first?.line, "has no path; every route starts with one, e.g. path: /p/{id}")
                continue
            }
            guard case .scalar(let pathText) = pathEntry.value else {
                rowProblem("path", pathEntry.line, "must be a path pattern, e.g. /p/{id}")
                continue
            }
            let pattern: RoutePattern
            do {
                pattern = try RoutePattern(parsing: pathText)
            } catch {
                rowProblem("path", pathEntry.line, "\(quoted(pathText)): \(error)")
                continue
            }
            var route = RouteSettings(pattern: pattern)
            var broken = false
            for item in row where item.path != "path" {
                func bad(_ message: String) {
                    broken = true
                    rowProblem(item.path, item.line, message)
                }
                switch item.path {
                case "web", "ios", "android":
                    guard case .scalar(let text) = item.value else {
                        bad("must be an https URL, e.g. https://www.example.com/p/{id}")
                        continue
                    }
                    do {
                        let target = try RedirectTemplate(parsing: text, placeholders: route.placeholders)
                        switch item.path {
                        case "web": route.web = target
                        case "ios": route.ios = target
                        default: route.android = target
                        }
                    } catch {
                        bad("\(quoted(text)): \(error)")
                    }
                case "page":
                    guard case .scalar(let text) = item.value else {
                        bad("must be a file name of the site's directory, e.g. help.html")
                        continue
                    }
                    if let message = pageNameProblem(text) {
                        bad("\(quoted(text)): \(message)")
                        continue
                    }
                    route.page = text
                case "status":
                    let allowed = RouteSettings.statuses.map { "\($0.rawValue)" }
                    guard case .scalar(let text) = item.value, text.utf8.count == 3, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                        let code = Int(text), let status = Status(rawValue: code), RouteSettings.statuses.contains(status)
                    else {
                        bad("must be one of \(allowed.joined(separator: ", "))")
                        continue
                    }
                    route.status = status
                case "interstitial":
                    guard case .scalar(let text) = item.value, let flag = boolean(text) else {
                        bad("must be true or false")
                        continue
                    }
                    route.interstitial = flag
                case "preview":
                    guard case .mapping(let keys) = item.value else {
                        bad("must be a mapping of \(PreviewSettings.keys.joined(separator: ", "))")
                        continue
                    }
                    route.preview = parsePreview(keys, captures: pattern.captureNames) { key, line, message in
                        broken = true
                        rowProblem("preview.\(key)", line, message)
                    }
                default:
                    bad("unknown key; a route knows \(RouteSettings.keys.joined(separator: ", "))")
                }
            }
            if broken { continue }
            if route.web == nil && route.ios == nil && route.android == nil && route.page == nil {
                rowProblem(nil, pathEntry.line, "names no target; give at least one of web, ios, android, page")
                continue
            }
            if route.web != nil && route.page != nil {
                rowProblem(nil, pathEntry.line, "web and page both answer browsers: keep one (ios and android may go with page)")
                continue
            }
            if let earlier = seen[pattern.text] {
                rowProblem(nil, pathEntry.line, "the same path as routes[\(earlier)], which is always taken first; remove one")
                continue
            }
            seen[pattern.text] = index
            routes.append(route)
        }
        let widest = PreparedRoutes.widestCandidates(routes)
        guard widest.count <= PreparedRoutes.maximumCandidates else {
            problem(
                "\(at): \(widest.count) routes start with \(quoted(widest.prefix)) or a part of it, so a request would try each in turn; "
                    + "at most \(PreparedRoutes.maximumCandidates): give them literal prefixes of their own (/p/{id}, /invite/*)")
            return []
        }
        return routes
    }

    /// A `preview` mapping's keys. `captures` are the names its text may use.
    static func parsePreview(_ keys: [YAMLEntry], captures: [String], problem: (String, Int?, String) -> Void) -> PreviewSettings {
        var preview = PreviewSettings()
        for item in keys {
            guard case .scalar(let text) = item.value else {
                problem(item.path, item.line, "must be one line of text")
                continue
            }
            do {
                switch item.path {
                case "title": preview.title = try PreviewText(parsing: text, captures: captures)
                case "description": preview.description = try PreviewText(parsing: text, captures: captures)
                case "site-name": preview.siteName = try PreviewText(parsing: text, captures: captures)
                case "image":
                    do {
                        preview.image = try RedirectTemplate(parsing: text, placeholders: captures)
                    } catch {
                        problem(item.path, item.line, "\(quoted(text)): an https URL: \(error)")
                    }
                default:
                    problem(item.path, item.line, "unknown key; preview knows \(PreviewSettings.keys.joined(separator: ", "))")
                }
            } catch {
                problem(item.path, item.line, "\(quoted(text)): \(error)")
            }
        }
        return preview
    }

    /// YAML 1.2's core schema booleans (what Yams reads as Bool).
    static func boolean(_ text: String) -> Bool? {
        switch text {
        case "true", "True", "TRUE": true
        case "false", "False", "FALSE": false
        default: nil
        }
    }
}
