private import CGIF
private import CHeif
private import CLCMS2
private import CPNG
// ImageCodecs module. See DESIGN.md §3.
private import CTurboJPEG
private import CWebP
private import CZlib

enum LinkCheck {
  static func versions() -> [String] {
    [
      String(cString: heif_get_version()), String(cString: zlibVersion()), String(WebPGetDecoderVersion()),
      String(cmsGetEncodedCMMversion()), String(GIFLIB_MAJOR), String(cString: png_get_libpng_ver(nil)),
      String(tjInitDecompress() != nil),
    ]
  }
}
