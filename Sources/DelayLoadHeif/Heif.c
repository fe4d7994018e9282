#include "DelayLoadHeif.h"

#include "DelayLoad.h"

// --- libheif (Debian 12: libheif 1.15 with libde265) ---------------------------------------------
// Only the HEIF files the fast path declines (AVIF, and HEICs it refuses) reach libheif. Linked, it
// brought libde265, libx265, libaom, libdav1d and libnuma into every process and ran their
// start-up code: ~4–6 ms of each `attachd process` on a JPEG (measured with a program that only
// dlopens them). Opened when the first libheif context is made (HEIFCodec).
static DelayLoadLibrary heif = {"libheif.so.1", 0, NULL, ""};

const char *DelayLoad_heif(void) { return DelayLoadLibrary_open(&heif); }

FORWARD(heif, struct heif_error, heif_init, (struct heif_init_params * params), (params))
FORWARD(heif, struct heif_context *, heif_context_alloc, (void), ())
FORWARD_VOID(heif, heif_context_free, (struct heif_context * context), (context))
FORWARD_VOID(heif, heif_context_set_maximum_image_size_limit,
             (struct heif_context * context, int maximum_width), (context, maximum_width))
FORWARD_VOID(heif, heif_context_set_max_decoding_threads, (struct heif_context * context, int threads),
             (context, threads))
FORWARD(heif, struct heif_error, heif_context_read_from_memory_without_copy,
        (struct heif_context * context, const void *memory, size_t size,
         const struct heif_reading_options *options),
        (context, memory, size, options))
FORWARD(heif, int, heif_context_get_number_of_top_level_images, (struct heif_context * context),
        (context))
FORWARD(heif, struct heif_error, heif_context_get_primary_image_handle,
        (struct heif_context * context, struct heif_image_handle **handle), (context, handle))
FORWARD_VOID(heif, heif_image_handle_release, (const struct heif_image_handle *handle), (handle))
FORWARD(heif, int, heif_image_handle_get_width, (const struct heif_image_handle *handle), (handle))
FORWARD(heif, int, heif_image_handle_get_height, (const struct heif_image_handle *handle), (handle))
FORWARD(heif, int, heif_image_handle_get_ispe_width, (const struct heif_image_handle *handle),
        (handle))
FORWARD(heif, int, heif_image_handle_get_ispe_height, (const struct heif_image_handle *handle),
        (handle))
FORWARD(heif, int, heif_image_handle_get_luma_bits_per_pixel,
        (const struct heif_image_handle *handle), (handle))
FORWARD(heif, int, heif_image_handle_has_alpha_channel, (const struct heif_image_handle *handle),
        (handle))
FORWARD(heif, int, heif_image_handle_is_premultiplied_alpha,
        (const struct heif_image_handle *handle), (handle))
FORWARD(heif, struct heif_error, heif_image_handle_get_nclx_color_profile,
        (const struct heif_image_handle *handle, struct heif_color_profile_nclx **profile),
        (handle, profile))
FORWARD_VOID(heif, heif_nclx_color_profile_free, (struct heif_color_profile_nclx * profile),
             (profile))
FORWARD(heif, size_t, heif_image_handle_get_raw_color_profile_size,
        (const struct heif_image_handle *handle), (handle))
FORWARD(heif, struct heif_error, heif_image_handle_get_raw_color_profile,
        (const struct heif_image_handle *handle, void *data), (handle, data))
FORWARD(heif, struct heif_decoding_options *, heif_decoding_options_alloc, (void), ())
FORWARD_VOID(heif, heif_decoding_options_free, (struct heif_decoding_options * options), (options))
FORWARD(heif, struct heif_error, heif_decode_image,
        (const struct heif_image_handle *handle, struct heif_image **image,
         enum heif_colorspace colorspace, enum heif_chroma chroma,
         const struct heif_decoding_options *options),
        (handle, image, colorspace, chroma, options))
FORWARD_VOID(heif, heif_image_release, (const struct heif_image *image), (image))
FORWARD(heif, int, heif_image_get_width, (const struct heif_image *image, enum heif_channel channel),
        (image, channel))
FORWARD(heif, int, heif_image_get_height, (const struct heif_image *image, enum heif_channel channel),
        (image, channel))
FORWARD(heif, int, heif_image_get_bits_per_pixel_range,
        (const struct heif_image *image, enum heif_channel channel), (image, channel))
FORWARD(heif, const uint8_t *, heif_image_get_plane_readonly,
        (const struct heif_image *image, enum heif_channel channel, int *stride),
        (image, channel, stride))
FORWARD(heif, int, heif_image_is_premultiplied_alpha, (struct heif_image * image), (image))
FORWARD(heif, int, heif_image_has_channel, (const struct heif_image *image, enum heif_channel channel),
        (image, channel))
FORWARD(heif, struct heif_error, heif_image_get_nclx_color_profile,
        (const struct heif_image *image, struct heif_color_profile_nclx **out_data), (image, out_data))
