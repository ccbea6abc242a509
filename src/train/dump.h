/* Private to src/train: the debug dump (see dump.c for the file layout). */
#ifndef PTDP_TRAIN_DUMP_H
#define PTDP_TRAIN_DUMP_H

#include "ptdp/trainer.h"

typedef struct ptdp_dump ptdp_dump;

int ptdp_dump_open(ptdp_dump **d, ptdp_trainer *tr, const char *path);
int ptdp_dump_grads(ptdp_dump *d, ptdp_trainer *tr);
void ptdp_dump_record(ptdp_dump *d, long long iteration, double loss, double lr, double norm);
int ptdp_dump_close(ptdp_dump **d, ptdp_trainer *tr);

#endif
