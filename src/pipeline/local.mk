# src/pipeline: the driver that runs one iteration's pipeline schedule (src/layout/schedule.c)
# on a rank's model chunks, with the point-to-point transfers between stages
libptdp_a_SOURCES += src/pipeline/driver.c
