import Foundation

/// A number of bytes as a person reads it, in powers of 1000: "512 B", "300.0 KB", "1.2 GB". One
/// wording for the command line's reports and the web view's pages.
public enum ByteCount {
    public static func text(_ n: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(n)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(n) B" : "\(String(format: "%.1f", value)) \(units[unit])"
    }
}
