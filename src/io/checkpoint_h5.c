/* HDF5 helpers of the checkpoint module (the attribute helpers it shares with the run file are in
 * h5util.c).  Dataset creation is collective in parallel HDF5: every rank calls it in the same
 * order with the same values. */
#include "checkpoint_impl.h"

#include "ptdp/error.h"

#include <stdio.h>
#include <string.h>

int ckpt_dataset_create(hid_t file, const char *path, int ndim, long long rows, long long cols, hid_t *ds)
{
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  PTDP_CALL_HDF5(lcpl);
  PTDP_CALL_HDF5(dcpl);
  PTDP_CALL_HDF5(H5Pset_create_intermediate_group(lcpl, 1));
  /* every element is written: filling with zeros first would double the bytes written */
  PTDP_CALL_HDF5(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
  PTDP_CALL_HDF5(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
  hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
  hid_t sp = H5Screate_simple(ndim, dims, NULL);
  PTDP_CALL_HDF5(sp);
  *ds = H5Dcreate2(file, path, H5T_IEEE_F32LE, sp, lcpl, dcpl, H5P_DEFAULT);
  PTDP_CALL_HDF5(*ds);
  PTDP_CALL_HDF5(H5Sclose(sp));
  PTDP_CALL_HDF5(H5Pclose(dcpl));
  PTDP_CALL_HDF5(H5Pclose(lcpl));
  return 0;
}

int ckpt_fapl(MPI_Comm comm, hid_t *fapl)
{
  *fapl = H5Pcreate(H5P_FILE_ACCESS);
  PTDP_CALL_HDF5(*fapl);
  PTDP_CALL_HDF5(H5Pset_fapl_mpio(*fapl, comm, MPI_INFO_NULL));
  /* metadata reads by one rank and broadcast; metadata written collectively */
  PTDP_CALL_HDF5(H5Pset_all_coll_metadata_ops(*fapl, 1));
  PTDP_CALL_HDF5(H5Pset_coll_metadata_write(*fapl, 1));
  /* objects of 4 KiB and more start on a 4 KiB boundary: a load's direct reads (checkpoint_direct.c)
   * then begin and end on whole blocks, and a tensor split in whole blocks never shares one */
  PTDP_CALL_HDF5(H5Pset_alignment(*fapl, 4096, 4096));
  /* the 1.10 file format at least: object headers, B-trees and heaps carry checksums, so a
   * damaged metadata byte is an HDF5 error ("incorrect metadata checksum") when the file is read
   * instead of a structure HDF5 would parse; tensors carry our own checksums */
  PTDP_CALL_HDF5(H5Pset_libver_bounds(*fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST));
  return 0;
}
