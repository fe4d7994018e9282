#include <lcms2.h>

// lcms2's pixel-format constants (TYPE_RGB_8 …) are macros built from other function-like macros
// (COLORSPACE_SH(PT_RGB)|CHANNELS_SH(3)|…), which Swift cannot import; these wrappers exist for that.
static inline cmsUInt32Number CLCMS2_TYPE_GRAY_8(void) { return TYPE_GRAY_8; }
static inline cmsUInt32Number CLCMS2_TYPE_RGB_8(void) { return TYPE_RGB_8; }
static inline cmsUInt32Number CLCMS2_TYPE_RGBA_8(void) { return TYPE_RGBA_8; }
static inline cmsUInt32Number CLCMS2_TYPE_CMYK_8(void) { return TYPE_CMYK_8; }
// Adobe CMYK JPEGs store inverted samples; the _REV flavour tells lcms so.
static inline cmsUInt32Number CLCMS2_TYPE_CMYK_8_REV(void) { return TYPE_CMYK_8_REV; }
