/* kb_bview.c — one view over plain, portable-packed and scalar-native B. */
#include "kb_internal.h"

void kb_bview_from_call(const kb_gemm_call *c, kb_bview *v) {
    if (c->bform == KB_BFORM_PLAIN) {
        v->data = c->B;
        v->panel_cols = c->N;
        v->panel_stride = 0;
        v->row_stride = c->ldb;
        v->bias = c->bias;
        v->bias_panel_stride = c->N;
        return;
    }
    const kb_f16 *payload = (const kb_f16 *)c->bpayload;
    size_t bn = c->bhdr->block_n;
    if (c->bhdr->layout == KB_LAYOUT_SCALAR_F16P16X1B) {
        /* per block: bn bias values, then K rows of bn values */
        v->data = payload + bn;
        v->panel_cols = bn;
        v->panel_stride = bn + c->K * bn;
        v->row_stride = bn;
        v->bias = payload;
        v->bias_panel_stride = bn + c->K * bn;
        return;
    }
    /* portable: per block K rows of bn values; bias passed separately */
    v->data = payload;
    v->panel_cols = bn;
    v->panel_stride = c->K * bn;
    v->row_stride = bn;
    v->bias = c->bias;
    v->bias_panel_stride = bn;
}
