"""Makes the JPEG inputs of Scripts/bench-load from the corpus iPhone HEIC (needs Pillow and
pillow-heif): usage: make_images.py HEIC OUT_12MP OUT_48MP

- 12 MP: the HEIC's own 4032x3024 pixels (decoded upright, 3024x4032), saved as a camera-like
  JPEG: quality 92, 4:2:0, with the HEIC's EXIF (GPS included, Orientation set to 1 since the
  pixels are already upright) and its Display P3 ICC profile.
- 48 MP: the same photo upscaled (Lanczos) to 6000x8000 plus Gaussian noise (sigma 6 per
  channel), so that it compresses like a real sensor image rather than a smooth upscale;
  quality 92, 4:2:0, same EXIF and ICC.
"""

import sys

import pillow_heif
from PIL import Image, ImageChops, ImageOps

pillow_heif.register_heif_opener()


def exif_upright(image: Image.Image) -> bytes:
    exif = image.getexif()
    exif[0x0112] = 1  # Orientation: pixels are stored upright
    return exif.tobytes()


def save(image: Image.Image, source: Image.Image, path: str) -> None:
    image.save(path, "JPEG", quality=92, subsampling="4:2:0", exif=exif_upright(source),
               icc_profile=source.info.get("icc_profile"))


def main() -> None:
    heic, out12, out48 = sys.argv[1:4]
    with Image.open(heic) as source:
        upright = ImageOps.exif_transpose(source.convert("RGB"))
        save(upright, source, out12)
        width, height = (6000, 8000) if upright.height > upright.width else (8000, 6000)
        large = upright.resize((width, height), Image.Resampling.LANCZOS)
        noise = Image.merge("RGB", [Image.effect_noise((width, height), 6) for _ in range(3)])
        # effect_noise is centred on 128: a + n - 128, clipped to 0...255.
        large = ImageChops.add(large, noise, scale=1.0, offset=-128)
        save(large, source, out48)


if __name__ == "__main__":
    main()
