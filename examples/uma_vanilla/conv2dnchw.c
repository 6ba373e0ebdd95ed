/* The Vanilla accelerator's one function (TVM's UMA tutorial): a naive NCHW convolution of
   one image, stride 1, "same" zero padding (kh / 2, kw / 2), odd kernels.
     ifmap   [ic, ih, iw]      weights [oc, ic, kh, kw]      result [oc, ih, iw]
   Returns 0 (the tutorial's status convention). */
int vanilla_conv2dnchw(float *ifmap, float *weights, float *result, int oc, int iw, int ih,
                       int ic, int kh, int kw) {
  int ph = kh / 2, pw = kw / 2;
  for (int o = 0; o < oc; ++o)
    for (int y = 0; y < ih; ++y)
      for (int x = 0; x < iw; ++x) {
        float acc = 0.0f;
        for (int c = 0; c < ic; ++c)
          for (int ky = 0; ky < kh; ++ky) {
            int iy = y + ky - ph;
            if (iy < 0 || iy >= ih) continue;
            for (int kx = 0; kx < kw; ++kx) {
              int ix = x + kx - pw;
              if (ix < 0 || ix >= iw) continue;
              acc += ifmap[(c * ih + iy) * iw + ix] * weights[((o * ic + c) * kh + ky) * kw + kx];
            }
          }
        result[(o * ih + y) * iw + x] = acc;
      }
  return 0;
}
